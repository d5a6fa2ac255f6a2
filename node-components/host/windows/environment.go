//go:build windows

package windows

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"github.com/capwin/capwin/node-components/host"
)

// machineEnvironmentKey holds the machine-wide environment variables (System
// Properties' "System variables").
const machineEnvironmentKey = `SYSTEM\CurrentControlSet\Control\Session Manager\Environment`

// environment is the machine-wide environment. Errors never quote a value.
type environment struct{}

var _ host.Environment = environment{}

// Get returns a variable's value as the registry holds it: a REG_EXPAND_SZ
// value (Path, TEMP) comes back unexpanded, %SystemRoot% and all.
func (environment) Get(_ context.Context, name string) (string, bool, error) {
	if err := host.CheckEnvironmentName(name); err != nil {
		return "", false, fmt.Errorf("reading machine environment variable: %w", err)
	}
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, machineEnvironmentKey, registry.QUERY_VALUE)
	if err != nil {
		return "", false, fmt.Errorf("opening the machine environment: %w", err)
	}
	defer k.Close() //nolint:errcheck // read only
	v, _, err := k.GetStringValue(name)
	switch {
	case errors.Is(err, registry.ErrNotExist):
		return "", false, nil
	case errors.Is(err, registry.ErrUnexpectedType):
		return "", false, fmt.Errorf("reading machine environment variable %s: it is not a string value", name)
	case err != nil:
		return "", false, fmt.Errorf("reading machine environment variable %s: %w", name, err)
	}
	return v, true, nil
}

// Set writes a variable as REG_SZ, except one that already is REG_EXPAND_SZ,
// which stays so: rewriting Path as REG_SZ would leave every %SystemRoot% in
// it unexpanded and break the machine.
func (environment) Set(_ context.Context, name, value string) error {
	if err := host.CheckEnvironment(name, value); err != nil {
		return fmt.Errorf("setting machine environment variable: %w", err)
	}
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, machineEnvironmentKey, registry.QUERY_VALUE|registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("opening the machine environment: %w", err)
	}
	defer k.Close() //nolint:errcheck // the value is written when Set*Value returns
	_, typ, err := k.GetValue(name, nil)
	if err != nil && !errors.Is(err, registry.ErrNotExist) {
		return fmt.Errorf("reading the type of machine environment variable %s: %w", name, err)
	}
	if err == nil && typ == registry.EXPAND_SZ {
		err = k.SetExpandStringValue(name, value)
	} else {
		err = k.SetStringValue(name, value)
	}
	if err != nil {
		return fmt.Errorf("setting machine environment variable %s: %w", name, err)
	}
	broadcastEnvironmentChange()
	return nil
}

// Unset removes a variable; a missing one is fine.
func (environment) Unset(_ context.Context, name string) error {
	if err := host.CheckEnvironmentName(name); err != nil {
		return fmt.Errorf("removing machine environment variable: %w", err)
	}
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, machineEnvironmentKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("opening the machine environment: %w", err)
	}
	defer k.Close() //nolint:errcheck // the value is gone when DeleteValue returns
	if err := k.DeleteValue(name); err != nil {
		if errors.Is(err, registry.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("removing machine environment variable %s: %w", name, err)
	}
	broadcastEnvironmentChange()
	return nil
}

var (
	user32                  = windows.NewLazySystemDLL("user32.dll")
	procSendMessageTimeoutW = user32.NewProc("SendMessageTimeoutW")
)

// broadcastEnvironmentChange tells the windows of this session that the
// machine environment changed, as setx.exe and the System Properties dialog
// do; processes that listen re-read it. It is best effort: the registry is
// what new processes read, and a process that does not listen (a running
// service) keeps the environment it started with.
func broadcastEnvironmentChange() {
	const (
		hwndBroadcast   = 0xFFFF
		wmSettingChange = 0x001A
		smtoAbortIfHung = 0x0002
		timeoutMillis   = 1000
	)
	if procSendMessageTimeoutW.Find() != nil {
		return
	}
	param, err := windows.UTF16PtrFromString("Environment")
	if err != nil {
		return
	}
	var result uintptr
	procSendMessageTimeoutW.Call(hwndBroadcast, wmSettingChange, 0, uintptr(unsafe.Pointer(param)), //nolint:errcheck // best effort
		smtoAbortIfHung, timeoutMillis, uintptr(unsafe.Pointer(&result)))
}
