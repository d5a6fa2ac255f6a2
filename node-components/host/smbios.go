package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Hardware is what the machine's firmware says it is, from its SMBIOS
// tables: what tells the platform a node runs on.
type Hardware struct {
	// Manufacturer and Product are the System Information's (SMBIOS type
	// 1): "VMware, Inc." and "VMware7,1" on vSphere, "Microsoft
	// Corporation" and "Virtual Machine" on Hyper-V and Azure.
	Manufacturer string `json:"manufacturer"`
	Product      string `json:"product"`
	// UUID is the System Information's UUID in the byte order dmidecode
	// reads it (the first three fields little-endian since SMBIOS 2.6),
	// upper case; empty when the firmware sets none.
	UUID string `json:"uuid,omitempty"`
	// ChassisAssetTag is the System Enclosure's asset tag (SMBIOS type 3):
	// Azure sets 7783-7084-3265-9085-8269-3286-77 on every VM.
	ChassisAssetTag string `json:"chassisAssetTag,omitempty"`
}

// ParseRawSMBIOS reads Hardware from the raw SMBIOS data Windows'
// GetSystemFirmwareTable('RSMB') returns: a RawSMBIOSData header (calling
// method, major and minor version, DMI revision, the table's length as a
// little-endian DWORD) followed by the structure table (DMTF DSP0134).
func ParseRawSMBIOS(raw []byte) (Hardware, error) {
	if len(raw) < 8 {
		return Hardware{}, errors.New("SMBIOS data: shorter than its header")
	}
	major, minor := raw[1], raw[2]
	n := binary.LittleEndian.Uint32(raw[4:8])
	if uint64(n) > uint64(len(raw)-8) {
		return Hardware{}, fmt.Errorf("SMBIOS data: the table's length %d exceeds the %d bytes read", n, len(raw)-8)
	}
	table := raw[8 : 8+n]
	var hw Hardware
	var sawSystem bool
	for len(table) >= 4 {
		typ, length := table[0], int(table[1])
		if length < 4 || length > len(table) {
			return Hardware{}, fmt.Errorf("SMBIOS data: a type %d structure of length %d in %d bytes", typ, length, len(table))
		}
		formatted := table[:length]
		end := bytes.Index(table[length:], []byte{0, 0})
		if end < 0 {
			return Hardware{}, fmt.Errorf("SMBIOS data: a type %d structure's strings do not end", typ)
		}
		strs := strings.Split(string(table[length:length+end]), "\x00")
		str := func(offset int) string {
			if offset >= len(formatted) {
				return ""
			}
			i := int(formatted[offset])
			if i == 0 || i > len(strs) {
				return ""
			}
			return strings.TrimSpace(strs[i-1])
		}
		switch typ {
		case 1:
			if !sawSystem {
				sawSystem = true
				hw.Manufacturer, hw.Product = str(0x04), str(0x05)
				if length >= 0x18 {
					hw.UUID = smbiosUUID(formatted[0x08:0x18], major, minor)
				}
			}
		case 3:
			if hw.ChassisAssetTag == "" {
				hw.ChassisAssetTag = str(0x08)
			}
		}
		table = table[length+end+2:]
		if typ == 127 {
			break // end of table
		}
	}
	if !sawSystem {
		return Hardware{}, errors.New("SMBIOS data: no System Information (type 1)")
	}
	return hw, nil
}

// smbiosUUID writes a type 1 UUID as dmidecode does: none when all bytes
// are 0x00 or 0xFF, and since SMBIOS 2.6 its first three fields
// little-endian.
func smbiosUUID(b []byte, major, minor byte) string {
	if bytes.Count(b, []byte{0}) == 16 || bytes.Count(b, []byte{0xff}) == 16 {
		return ""
	}
	u := append([]byte(nil), b...)
	if major > 2 || (major == 2 && minor >= 6) {
		u[0], u[1], u[2], u[3] = u[3], u[2], u[1], u[0]
		u[4], u[5] = u[5], u[4]
		u[6], u[7] = u[7], u[6]
	}
	return fmt.Sprintf("%X-%X-%X-%X-%X", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
