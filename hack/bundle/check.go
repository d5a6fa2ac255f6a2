package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/pe"
	"encoding/hex"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/capwin/capwin/node-components/bundle"
)

// CheckBinary checks that a built component is a console program for
// Windows on AMD64 (PE32+, the console subsystem, as services and the
// kubelet's CNI calls run it) and that its embedded build information
// names the pinned module and version, built for windows/amd64 without
// cgo and with -trimpath.
func CheckBinary(b *Built) error {
	f, err := pe.Open(b.Path)
	if err != nil {
		return fmt.Errorf("%s: not a PE file: %w", b.File, err)
	}
	defer f.Close() //nolint:errcheck
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
		return fmt.Errorf("%s: PE machine %#x, want AMD64 (%#x)", b.File, f.Machine, pe.IMAGE_FILE_MACHINE_AMD64)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		return fmt.Errorf("%s: not PE32+ (no 64-bit optional header)", b.File)
	}
	if oh.Subsystem != pe.IMAGE_SUBSYSTEM_WINDOWS_CUI {
		return fmt.Errorf("%s: PE subsystem %d, want the console subsystem (%d)", b.File, oh.Subsystem, pe.IMAGE_SUBSYSTEM_WINDOWS_CUI)
	}
	info, err := buildinfo.ReadFile(b.Path)
	if err != nil {
		return fmt.Errorf("%s: no Go build information: %w", b.File, err)
	}
	return checkBuildInfo(b, info)
}

func checkBuildInfo(b *Built, info *debug.BuildInfo) error {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": "windows", "GOARCH": "amd64", "GOAMD64": "v1", "CGO_ENABLED": "0", "-trimpath": "true", "GOEXPERIMENT": "", "GOFIPS140": ""} {
		if settings[k] != want {
			return fmt.Errorf("%s: built with %s=%q, want %q", b.File, k, settings[k], want)
		}
	}
	if info.Path != b.Package {
		return fmt.Errorf("%s: built from %s, want %s", b.File, info.Path, b.Package)
	}
	// The go command records the module of the package it built as the
	// main module, with its version and checksum when it came from the
	// module proxy.
	if info.Main.Path != b.Module {
		return fmt.Errorf("%s: built from module %s, want %s", b.File, info.Main.Path, b.Module)
	}
	if b.Wrapper == "" {
		return nil
	}
	if info.Main.Replace != nil {
		return fmt.Errorf("%s: %s is replaced by %s %s", b.File, b.Module, info.Main.Replace.Path, info.Main.Replace.Version)
	}
	if info.Main.Version != b.Version {
		return fmt.Errorf("%s: built from %s %s, the pin is %s", b.File, b.Module, info.Main.Version, b.Version)
	}
	if info.Main.Sum == "" {
		return fmt.Errorf("%s: %s %s has no checksum in its build information", b.File, b.Module, info.Main.Version)
	}
	// Every dependency came from the module proxy too: none replaced by a
	// directory.
	for _, d := range info.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		if m.Version == "" || m.Sum == "" {
			return fmt.Errorf("%s: dependency %s has no version or checksum (a local replacement?)", b.File, d.Path)
		}
	}
	return nil
}

// CheckZip checks that a bundle zip holds manifest (the bytes of the
// manifest beside it) and exactly the files it lists, each with the
// manifest's size and SHA-256.
func CheckZip(path string, manifest []byte, m *bundle.Manifest) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close() //nolint:errcheck
	files := map[string]bundle.File{}
	for _, f := range m.Files {
		files[f.Name] = f
	}
	seen := map[string]bool{}
	for _, e := range zr.File {
		if e.Name == bundle.ManifestName {
			r, err := e.Open()
			if err != nil {
				return err
			}
			inZip, err := io.ReadAll(r)
			_ = r.Close()
			if err != nil {
				return err
			}
			if !bytes.Equal(inZip, manifest) {
				return fmt.Errorf("%s: its %s is not the manifest beside it", path, bundle.ManifestName)
			}
			seen[e.Name] = true
			continue
		}
		f, ok := files[e.Name]
		if !ok {
			return fmt.Errorf("%s: %s is not in the manifest", path, e.Name)
		}
		r, err := e.Open()
		if err != nil {
			return err
		}
		h := sha256.New()
		n, err := io.Copy(h, r)
		_ = r.Close()
		if err != nil {
			return fmt.Errorf("%s: reading %s: %w", path, e.Name, err)
		}
		if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 || n != f.Size {
			return fmt.Errorf("%s: %s is %d bytes with sha256 %s; the manifest says %d bytes, %s", path, e.Name, n, sum, f.Size, f.SHA256)
		}
		seen[e.Name] = true
	}
	if !seen[bundle.ManifestName] {
		return fmt.Errorf("%s: no %s", path, bundle.ManifestName)
	}
	for n := range files {
		if !seen[n] {
			return fmt.Errorf("%s: %s is in the manifest, not in the zip", path, n)
		}
	}
	return nil
}
