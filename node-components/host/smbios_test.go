package host

import (
	"encoding/binary"
	"strings"
	"testing"
)

// structure is one SMBIOS structure: its formatted area (type, length and
// handle are added) and its strings.
func structure(typ byte, handle uint16, formatted []byte, strs ...string) []byte {
	b := []byte{typ, byte(4 + len(formatted)), byte(handle), byte(handle >> 8)}
	b = append(b, formatted...)
	if len(strs) == 0 {
		return append(b, 0, 0)
	}
	for _, s := range strs {
		b = append(append(b, s...), 0)
	}
	return append(b, 0)
}

// systemInformation is a type 1 structure (SMBIOS 2.8 layout, 27 bytes).
func systemInformation(manufacturer, product string, uuid [16]byte) []byte {
	f := []byte{1, 2, 3, 4} // manufacturer, product, version, serial
	f = append(f, uuid[:]...)
	f = append(f, 6, 5, 0) // wake-up type, SKU, family
	return structure(1, 1, f, manufacturer, product, "None", "VMware-42 2b 6a", "SKU")
}

// chassis is a type 3 structure (SMBIOS 2.1 layout, 13 bytes).
func chassis(assetTag string) []byte {
	// manufacturer 1, type 1 (other), version 0, serial 2, asset tag 3,
	// boot-up, power supply, thermal state and security status.
	return structure(3, 3, []byte{1, 1, 0, 2, 3, 3, 3, 3, 2}, "No Enclosure", "None", assetTag)
}

// rawSMBIOS is what GetSystemFirmwareTable('RSMB') returns for a table.
func rawSMBIOS(major, minor byte, structures ...[]byte) []byte {
	var table []byte
	for _, s := range structures {
		table = append(table, s...)
	}
	table = append(table, structure(127, 0xfeff, nil)...)
	raw := []byte{0, major, minor, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(raw[4:], uint32(len(table)))
	return append(raw, table...)
}

var vmUUID = [16]byte{0x42, 0x2b, 0x6a, 0x1f, 0x4c, 0x3d, 0x9e, 0x01, 0x8a, 0x7b, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66}

// The fixtures were checked with dmidecode 3.4 (--from-dump, after an SMBIOS
// 3 entry point), which reads them as this test does.
func TestParseRawSMBIOS(t *testing.T) {
	bios := structure(0, 0, []byte{1, 2, 0, 0xe0, 3, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, "VMware, Inc.", "VMW71.00V.21100432.B64.2301110304", "01/11/2023")
	vsphere := rawSMBIOS(2, 7, bios, systemInformation("VMware, Inc.", "VMware7,1", vmUUID), chassis("No Asset Tag"))
	hw, err := ParseRawSMBIOS(vsphere)
	want := Hardware{Manufacturer: "VMware, Inc.", Product: "VMware7,1", UUID: "1F6A2B42-3D4C-019E-8A7B-112233445566", ChassisAssetTag: "No Asset Tag"}
	if err != nil || hw != want {
		t.Errorf("vSphere: %+v, %v; want %+v", hw, err, want)
	}

	azure := rawSMBIOS(3, 1, systemInformation("Microsoft Corporation", "Virtual Machine", vmUUID), chassis("7783-7084-3265-9085-8269-3286-77"))
	hw, err = ParseRawSMBIOS(azure)
	if err != nil || hw.Manufacturer != "Microsoft Corporation" || hw.Product != "Virtual Machine" || hw.ChassisAssetTag != "7783-7084-3265-9085-8269-3286-77" {
		t.Errorf("Azure: %+v, %v", hw, err)
	}

	// Before SMBIOS 2.6 the UUID is read in byte order.
	hw, _ = ParseRawSMBIOS(rawSMBIOS(2, 5, systemInformation("m", "p", vmUUID)))
	if hw.UUID != "422B6A1F-4C3D-9E01-8A7B-112233445566" {
		t.Errorf("SMBIOS 2.5 UUID = %s", hw.UUID)
	}
	// No UUID set, no asset tag string.
	hw, _ = ParseRawSMBIOS(rawSMBIOS(3, 0, systemInformation("m", "p", [16]byte{}), structure(3, 3, []byte{1, 1, 0, 2, 0, 3, 3, 3, 2}, "x", "y")))
	if hw.UUID != "" || hw.ChassisAssetTag != "" {
		t.Errorf("unset UUID and asset tag: %+v", hw)
	}

	for name, raw := range map[string][]byte{
		"empty":               nil,
		"no system":           rawSMBIOS(3, 0, chassis("x")),
		"length too long":     append(vsphere[:4:4], 0xff, 0xff, 0, 0),
		"strings unended":     vsphere[:len(vsphere)-1-len(structure(127, 0xfeff, nil))],
		"structure too short": rawSMBIOS(3, 0, []byte{1, 2, 0, 0, 0, 0}),
	} {
		if name == "strings unended" {
			raw = append([]byte(nil), raw...)
			binary.LittleEndian.PutUint32(raw[4:], uint32(len(raw)-8))
		}
		if hw, err := ParseRawSMBIOS(raw); err == nil || !strings.HasPrefix(err.Error(), "SMBIOS data: ") {
			t.Errorf("%s: %+v, %v; want an error", name, hw, err)
		}
	}
}
