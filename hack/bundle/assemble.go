package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/capwin/capwin/node-components/bundle"
)

// zipTime is every bundle entry's modification time: a fixed one, so that
// two builds of the same sources give the same zip.
var zipTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Outputs are the files make bundle writes.
type Outputs struct {
	Zip, Manifest, SBOM string
	// ZipSHA256 holds the zip's SHA-256 as sha256sum writes it ("<hex>  <name>"):
	// the image definitions read it (Packer cannot hash a binary file).
	ZipSHA256 string
}

// BaseName is the bundle's file name without extension.
func BaseName(kubernetesVersion string) string {
	return "capwin-node-bundle-" + kubernetesVersion + "-windows-amd64"
}

// Manifest describes the built components as capwin-node install reads it.
func Manifest(kubernetesVersion string, built []*Built) (*bundle.Manifest, error) {
	m := &bundle.Manifest{KubernetesVersion: kubernetesVersion}
	for _, b := range built {
		sum, size, err := hashFile(b.Path)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, bundle.File{Name: b.File, Component: b.Name, Module: b.Module, Version: b.Version, SHA256: sum, Size: size})
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	return m, nil
}

// Assemble writes the zip (manifest.json first, then the files by name),
// the manifest beside it and a CycloneDX SBOM into dir.
func Assemble(dir string, kubernetesVersion string, built []*Built) (*Outputs, error) {
	m, err := Manifest(kubernetesVersion, built)
	if err != nil {
		return nil, err
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	manifest = append(manifest, '\n')
	if _, err := bundle.Parse(manifest); err != nil {
		return nil, fmt.Errorf("the manifest written does not parse as capwin-node install reads it: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, BaseName(kubernetesVersion))
	out := &Outputs{Zip: base + ".zip", Manifest: base + ".manifest.json", SBOM: base + ".cdx.json", ZipSHA256: base + ".zip.sha256"}
	byName := map[string]*Built{}
	for _, b := range built {
		byName[b.File] = b
	}
	if err := writeAtomic(out.Zip, func(w io.Writer) error {
		zw := zip.NewWriter(w)
		if err := addEntry(zw, bundle.ManifestName, bytes.NewReader(manifest)); err != nil {
			return err
		}
		for _, f := range m.Files {
			r, err := os.Open(byName[f.Name].Path)
			if err != nil {
				return err
			}
			err = addEntry(zw, f.Name, r)
			_ = r.Close()
			if err != nil {
				return err
			}
		}
		return zw.Close()
	}); err != nil {
		return nil, err
	}
	zipSum, _, err := hashFile(out.Zip)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(out.ZipSHA256, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s  %s\n", zipSum, filepath.Base(out.Zip))
		return err
	}); err != nil {
		return nil, err
	}
	if err := writeAtomic(out.Manifest, func(w io.Writer) error { _, err := w.Write(manifest); return err }); err != nil {
		return nil, err
	}
	bom, err := SBOM(kubernetesVersion, m, built)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(out.SBOM, func(w io.Writer) error {
		return cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom)
	}); err != nil {
		return nil, err
	}
	return out, nil
}

func addEntry(zw *zip.Writer, name string, r io.Reader) error {
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: zipTime}
	h.SetMode(0o644)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, r)
	return err
}

// SBOM is the bundle's CycloneDX bill of materials: the bundle, each
// program with its SHA-256 and the module it was built from, and every Go
// module each program's build information lists (the program's own module
// and its dependencies), with its checksum.
// Nothing in it depends on when it was made.
func SBOM(kubernetesVersion string, m *bundle.Manifest, built []*Built) (*cdx.BOM, error) {
	bom := cdx.NewBOM()
	bundleRef := "capwin-node-bundle@" + kubernetesVersion
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{
		BOMRef: bundleRef, Type: cdx.ComponentTypeApplication, Name: "capwin-node-bundle", Version: kubernetesVersion,
		Description: "capwin's Windows node bundle for windows/amd64",
	}}
	byName := map[string]*Built{}
	for _, b := range built {
		byName[b.File] = b
	}
	var components []cdx.Component
	modules := map[string]cdx.Component{}
	deps := []cdx.Dependency{}
	var fileRefs []string
	for _, f := range m.Files {
		b := byName[f.Name]
		info, err := buildinfo.ReadFile(b.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		ref := "file:" + f.Name
		fileRefs = append(fileRefs, ref)
		components = append(components, cdx.Component{
			BOMRef: ref, Type: cdx.ComponentTypeApplication, Name: f.Component, Version: f.Version,
			Description: "bundle file " + f.Name + ", built from " + b.Package,
			Hashes:      &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: f.SHA256}},
			PackageURL:  purl(f.Module, f.Version),
		})
		var uses []string
		main := info.Main
		if main.Version == "" || main.Version == "(devel)" {
			main.Version = f.Version
		}
		for _, d := range append([]*debug.Module{&main}, info.Deps...) {
			mod := d
			if d.Replace != nil {
				mod = d.Replace
			}
			mref := purl(mod.Path, mod.Version)
			if _, ok := modules[mref]; !ok {
				c := cdx.Component{BOMRef: mref, Type: cdx.ComponentTypeLibrary, Name: mod.Path, Version: mod.Version, PackageURL: mref}
				if mod.Sum != "" {
					c.Properties = &[]cdx.Property{{Name: "go:module:sum", Value: mod.Sum}}
				}
				modules[mref] = c
			}
			uses = append(uses, mref)
		}
		// The standard library, by the Go version it was built with.
		std := "pkg:golang/stdlib@" + info.GoVersion
		if _, ok := modules[std]; !ok {
			modules[std] = cdx.Component{BOMRef: std, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: info.GoVersion, PackageURL: std}
		}
		uses = append(uses, std)
		sort.Strings(uses)
		deps = append(deps, cdx.Dependency{Ref: ref, Dependencies: &uses})
	}
	refs := make([]string, 0, len(modules))
	for r := range modules {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	for _, r := range refs {
		components = append(components, modules[r])
	}
	deps = append([]cdx.Dependency{{Ref: bundleRef, Dependencies: &fileRefs}}, deps...)
	bom.Components = &components
	bom.Dependencies = &deps
	return bom, nil
}

func purl(module, version string) string {
	if version == "" {
		return "pkg:golang/" + module
	}
	return "pkg:golang/" + module + "@" + strings.ReplaceAll(url.PathEscape(version), "+", "%2B")
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close() //nolint:errcheck
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// writeAtomic writes a file through a temporary one, renamed into place
// once complete.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck
	if err := write(tmp); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
