//go:build windows

package windows

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/capwin/capwin/node-components/host"
)

// rsmb is the firmware table provider signature 'RSMB' (the raw SMBIOS
// tables) as GetSystemFirmwareTable takes it.
const rsmb = 'R'<<24 | 'S'<<16 | 'M'<<8 | 'B'

var procGetSystemFirmwareTable = kernel32.NewProc("GetSystemFirmwareTable")

// Hardware reads the SMBIOS tables through GetSystemFirmwareTable, which
// any user may call; golang.org/x/sys/windows does not wrap it. The call
// returns the size it needs when the buffer is too small, and 0 on failure.
func (facts) Hardware(context.Context) (host.Hardware, error) {
	size, _, err := procGetSystemFirmwareTable.Call(rsmb, 0, 0, 0)
	if size == 0 {
		return host.Hardware{}, fmt.Errorf("reading the SMBIOS tables (GetSystemFirmwareTable): %w", err)
	}
	buf := make([]byte, size)
	n, _, err := procGetSystemFirmwareTable.Call(rsmb, 0, uintptr(unsafe.Pointer(&buf[0])), size)
	if n == 0 || n > size {
		return host.Hardware{}, fmt.Errorf("reading the SMBIOS tables (GetSystemFirmwareTable, %d bytes): %w", size, err)
	}
	return host.ParseRawSMBIOS(buf[:n])
}
