package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"golang.org/x/mod/modfile"

	"github.com/capwin/capwin/node-components/agent"
	"github.com/capwin/capwin/node-components/bundle"
	"github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

func testBuilder(t *testing.T) *Builder {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	pins, err := Pins(root)
	if err != nil {
		t.Fatal(err)
	}
	return &Builder{Root: root, Cache: t.TempDir(), KubernetesVersion: pins[KubernetesWrapper].Version, CapwinVersion: "test", Log: testLog{t}}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestPinsResolveForWindows resolves every component's package for
// windows/amd64 from its wrapper module with go.mod and go.sum as they are
// (-mod=readonly): a pin the proxy no longer serves, a go.sum that lacks a
// module, or a package that moved fails here, without the builds make
// bundle runs.
func TestPinsResolveForWindows(t *testing.T) {
	b := testBuilder(t)
	byWrapper := map[string][]string{}
	for _, c := range Components {
		if c.Wrapper != "" {
			byWrapper[c.Wrapper] = append(byWrapper[c.Wrapper], c.Package)
		}
	}
	for wrapper, pkgs := range byWrapper {
		cmd := exec.CommandContext(t.Context(), "go", append([]string{"list", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}"}, pkgs...)...)
		cmd.Dir = filepath.Join(repoRoot, wrapper)
		cmd.Env = b.env()
		// Standard output holds only packages with errors; standard error
		// also has the go command's download lines.
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("%s: go list -deps for windows/amd64: %v\n%s%s", wrapper, err, out, stderr.String())
		}
	}
}

// TestWrapperModulesPinOneModuleEach: every wrapper module requires its
// component's module at a release version, replaces none of the pinned
// modules, and declares its component's packages as tools, so that `go
// mod tidy` keeps what make bundle builds.
func TestWrapperModulesPinOneModuleEach(t *testing.T) {
	pins, err := Pins(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	release := regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
	for wrapper, p := range pins {
		if !release.MatchString(p.Version) {
			t.Errorf("%s pins %s %s, not a release", wrapper, p.Module, p.Version)
		}
		path := filepath.Join(repoRoot, wrapper, "go.mod")
		f, err := ReadGoMod(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range Components {
			if c.Wrapper == wrapper && !slices.ContainsFunc(f.Tool, func(tl *modfile.Tool) bool { return tl.Path == c.Package }) {
				t.Errorf("%s does not declare %s as a tool", path, c.Package)
			}
		}
	}
	entries, err := os.ReadDir("modules")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := pins["hack/bundle/modules/"+e.Name()]; !ok {
			t.Errorf("modules/%s builds no component", e.Name())
		}
	}
}

// TestDefaultKubernetesVersionIsTheFlavors: make bundle's default
// Kubernetes version is the one the simulation runs the flavors with,
// envtest's API server has, and the image definitions take the bundle of
// by default; and the Kubernetes wrapper replaces every staging module
// with that release's v0 version.
func TestDefaultKubernetesVersionIsTheFlavors(t *testing.T) {
	pins, err := Pins(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	v := pins[KubernetesWrapper].Version
	for file, want := range map[string]string{
		"../../test/sim/cluster.go":              `const KubernetesVersion = "` + v + `"`,
		"../../hack/tools/envtest/versions.env":  "KUBE_VERSION=" + v + "\n",
		"../../images/vsphere/variables.pkr.hcl": `default     = "` + v + `"`,
		"../../images/azure/variables.pkr.hcl":   `default     = "` + v + `"`,
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q: the bundle's Kubernetes %s is not the flavors'", file, want, v)
		}
	}
	path := filepath.Join(repoRoot, KubernetesWrapper, "go.mod")
	f, err := ReadGoMod(path)
	if err != nil {
		t.Fatal(err)
	}
	staging := "v0." + strings.Join(strings.Split(v, ".")[1:], ".")
	if len(f.Replace) == 0 {
		t.Errorf("%s replaces no staging module", path)
	}
	for _, r := range f.Replace {
		if r.New.Path != r.Old.Path || r.New.Version != staging {
			t.Errorf("%s replaces %s with %s %s, want %s", path, r.Old.Path, r.New.Path, r.New.Version, staging)
		}
	}
}

// TestEveryNeededFileIsBuilt: each file capwin-node join needs, for every
// network and csi-proxy choice, is a component make bundle builds, and
// the containerd pin is one the rendered configuration works with.
func TestEveryNeededFileIsBuilt(t *testing.T) {
	files := map[string]bool{}
	for _, c := range Components {
		if files[c.File] {
			t.Errorf("%s is built twice", c.File)
		}
		files[c.File] = true
	}
	for _, cfg := range []*nodeconfig.Config{
		{Network: nodeconfig.Network{CNI: "flannel", Mode: "overlay"}, CSIProxy: true},
		{Network: nodeconfig.Network{CNI: "flannel", Mode: "l2bridge"}},
		{Network: nodeconfig.Network{CNI: "calico"}},
	} {
		for _, n := range bundle.Needed(cfg) {
			if !files[n] {
				t.Errorf("capwin-node join needs %s (%s %s), which the bundle does not build", n, cfg.Network.CNI, cfg.Network.Mode)
			}
		}
	}
	pins, err := Pins(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	m := &bundle.Manifest{KubernetesVersion: "v1.36.3", Files: []bundle.File{{Name: "bin/containerd.exe", Version: pins["hack/bundle/modules/containerd"].Version}}}
	if err := bundle.CheckVersions(m); err != nil {
		t.Error(err)
	}
}

// TestSmallComponentsBuildToABundleInstallLays builds the components that
// take seconds (the CNI plugins and capwin-node), checks each program,
// assembles a bundle of them twice, and installs it with capwin-node's
// own install on the simulated Windows host.
func TestSmallComponentsBuildToABundleInstallLays(t *testing.T) {
	b := testBuilder(t)
	var built []*Built
	for _, c := range Components {
		if !c.Small {
			continue
		}
		r, err := b.Build(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckBinary(r); err != nil {
			t.Fatal(err)
		}
		built = append(built, r)
	}
	// Built again: the program comes from the cache, the go command does
	// not run.
	var buildLog strings.Builder
	b.Log = &buildLog
	again, err := b.Build(t.Context(), built[0].Component)
	if err != nil {
		t.Fatal(err)
	}
	if again.Path != built[0].Path || strings.Contains(buildLog.String(), "building") {
		t.Errorf("a second build of %s did not reuse %s: %s", built[0].Name, built[0].Path, buildLog.String())
	}
	b.Log = testLog{t}

	dir1, dir2 := t.TempDir(), t.TempDir()
	o1, err := Assemble(dir1, b.KubernetesVersion, built)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := Assemble(dir2, b.KubernetesVersion, built)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{o1.Zip, o2.Zip}, {o1.ZipSHA256, o2.ZipSHA256}, {o1.Manifest, o2.Manifest}, {o1.SBOM, o2.SBOM}} {
		a, _ := os.ReadFile(pair[0])
		c, _ := os.ReadFile(pair[1])
		if len(a) == 0 || !bytes.Equal(a, c) {
			t.Errorf("%s differs between two assemblies of the same programs", filepath.Base(pair[0]))
		}
	}
	// The image definitions take the zip's SHA-256 from this file, as
	// sha256sum -c reads it.
	sum, _, err := hashFile(o1.Zip)
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := os.ReadFile(o1.ZipSHA256); string(line) != sum+"  "+filepath.Base(o1.Zip)+"\n" {
		t.Errorf("%s holds %q, want the zip's SHA-256 %s and its name", filepath.Base(o1.ZipSHA256), line, sum)
	}
	data, err := os.ReadFile(o1.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bundle.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckZip(o1.Zip, data, m); err != nil {
		t.Fatal(err)
	}
	if err := CheckZip(o1.Zip, append(data, ' '), m); err == nil {
		t.Error("a zip whose manifest.json is not the manifest beside it passed")
	}
	for _, f := range m.Files {
		if f.Module == "" || f.Version == "" || f.Component == "" {
			t.Errorf("manifest entry %s lacks its component, module or version: %+v", f.Name, f)
		}
	}

	// The SBOM lists every file with its hash, and the modules each was
	// built from, the pinned one among them.
	sf, err := os.Open(o1.SBOM)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close() //nolint:errcheck
	bom := &cdx.BOM{}
	if err := cdx.NewBOMDecoder(sf, cdx.BOMFileFormatJSON).Decode(bom); err != nil {
		t.Fatal(err)
	}
	refs := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		refs[c.BOMRef] = c
	}
	for _, f := range m.Files {
		c, ok := refs["file:"+f.Name]
		if !ok || c.Hashes == nil || (*c.Hashes)[0].Value != f.SHA256 {
			t.Errorf("the SBOM lacks %s with its sha256", f.Name)
		}
		if f.Module != "github.com/capwin/capwin/node-components" {
			if _, ok := refs[purl(f.Module, f.Version)]; !ok {
				t.Errorf("the SBOM does not list %s %s, which %s is built from", f.Module, f.Version, f.Name)
			}
		}
	}
	// Package URLs as the purl specification writes Go modules, and the
	// standard library by the Go version that built the programs.
	for _, want := range []string{"pkg:golang/github.com/containernetworking/plugins@v1.9.1", "pkg:golang/github.com/containernetworking/plugins@v0.9.1", "pkg:golang/stdlib@" + runtime.Version()} {
		if _, ok := refs[want]; !ok {
			t.Errorf("the SBOM lacks %s", want)
		}
	}
	if got := purl("example.com/m", "v1.0.0+incompatible"); got != "pkg:golang/example.com/m@v1.0.0%2Bincompatible" {
		t.Errorf("purl of a +incompatible version: %s", got)
	}

	// capwin-node install lays the bundle out on a Windows host.
	h := sim.New(sim.Options{Root: t.TempDir()})
	var log strings.Builder
	a := &agent.Agent{Host: h, Log: &log}
	if err := a.Install(context.Background(), agent.InstallOptions{Bundle: o1.Zip}); err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		size, err := h.FS().Size(bundle.Destination(f.Name))
		if err != nil || size != f.Size {
			t.Errorf("after install, %s: %d bytes, %v; want %d", bundle.Destination(f.Name), size, err, f.Size)
		}
	}
	if ok, _ := h.FS().Exists(layout.Manifest); !ok {
		t.Errorf("install left no %s", layout.Manifest)
	}
}

// TestCheckBinaryRefuses: a program for another system, or one whose
// build information names another version of its module, is refused.
func TestCheckBinaryRefuses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := Components[slices.IndexFunc(Components, func(c Component) bool { return c.Name == "host-local" })]
	if err := CheckBinary(&Built{Component: c, Path: self, Version: "v1.9.1"}); err == nil {
		t.Error("the test binary (not a Windows program) passed the check")
	}
	info, err := buildinfo.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ k, v string }{{"GOOS", "windows"}, {"GOARCH", "amd64"}, {"GOAMD64", "v1"}, {"CGO_ENABLED", "0"}, {"-trimpath", "true"}} {
		i := slices.IndexFunc(info.Settings, func(x debug.BuildSetting) bool { return x.Key == s.k })
		if i < 0 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: s.k, Value: s.v})
		} else {
			info.Settings[i].Value = s.v
		}
	}
	info.Main = debug.Module{Path: "github.com/containernetworking/plugins", Version: "v1.9.1", Sum: "h1:8oU6WsIsU3bpnNZuvHp74a6cE1MJwbj2P7s4/yTUNlA="}
	cni := &debug.Module{Path: "github.com/containernetworking/cni", Version: "v1.3.0", Sum: "h1:v6EpN8RznAZj9765HhXQrtXgX+ECGebEYEmnuFjskwo="}
	info.Deps = []*debug.Module{cni}
	info.Path = c.Package
	pinned := &Built{Component: c, Version: "v1.9.1"}
	if err := checkBuildInfo(pinned, info); err != nil {
		t.Fatalf("the matching build information was refused: %v", err)
	}
	pinned.Version = "v1.9.0"
	if err := checkBuildInfo(pinned, info); err == nil || !strings.Contains(err.Error(), "the pin is v1.9.0") {
		t.Errorf("another version of the module passed: %v", err)
	}
	pinned.Version = "v1.9.1"
	info.Deps = []*debug.Module{{Path: cni.Path, Version: cni.Version, Replace: &debug.Module{Path: "../cni"}}}
	if err := checkBuildInfo(pinned, info); err == nil || !strings.Contains(err.Error(), "local replacement") {
		t.Errorf("a dependency replaced by a directory passed: %v", err)
	}
	info.Deps = []*debug.Module{cni}
	info.Main.Replace = &debug.Module{Path: "../plugins"}
	if err := checkBuildInfo(pinned, info); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("a replaced module passed: %v", err)
	}
}

// upstreamGoMod reads the go.mod of a pinned module's release from the
// module cache (downloading it if needed).
func upstreamGoMod(t *testing.T, module, version string) *modfile.File {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v", module, version, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	f, err := ReadGoMod(info.GoMod)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// goList runs go list for windows/amd64 in dir as make bundle builds.
func goList(t *testing.T, b *Builder, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	cmd.Env = b.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestWrappersBuildAsUpstream: each program is built with the dependency
// versions and the runtime defaults (GODEBUG, from the main module's go
// and godebug lines) of its own module's release, although the main
// module is the wrapper: every module the release requires is selected at
// the version it requires, and the wrapper's default GODEBUG is that of a
// module with the release's go and godebug lines.
func TestWrappersBuildAsUpstream(t *testing.T) {
	b := testBuilder(t)
	pins, err := Pins(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for wrapper, pin := range pins {
		up := upstreamGoMod(t, pin.Module, pin.Version)
		dir := filepath.Join(repoRoot, wrapper)
		selected := map[string]string{}
		for _, line := range strings.Split(goList(t, b, dir, "-m", "-f", "{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}", "all"), "\n") {
			if path, version, ok := strings.Cut(line, " "); ok {
				selected[path] = version
			}
		}
		replaced := map[string]bool{}
		for _, r := range up.Replace {
			replaced[r.Old.Path] = true
		}
		for _, r := range up.Require {
			if !replaced[r.Mod.Path] && selected[r.Mod.Path] != r.Mod.Version {
				t.Errorf("%s selects %s %s; %s %s requires %s", dir, r.Mod.Path, selected[r.Mod.Path], pin.Module, pin.Version, r.Mod.Version)
			}
		}

		scratch := t.TempDir()
		var gomod strings.Builder
		fmt.Fprintf(&gomod, "module scratch\n\ngo %s\n", up.Go.Version)
		for _, g := range up.Godebug {
			fmt.Fprintf(&gomod, "godebug %s=%s\n", g.Key, g.Value)
		}
		if err := os.WriteFile(filepath.Join(scratch, "go.mod"), []byte(gomod.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scratch, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want := goList(t, b, scratch, "-f", "{{.DefaultGODEBUG}}", ".")
		var pkg string
		for _, c := range Components {
			if c.Wrapper == wrapper {
				pkg = c.Package
				break
			}
		}
		if got := goList(t, b, dir, "-f", "{{.DefaultGODEBUG}}", pkg); got != want {
			t.Errorf("%s builds with GODEBUG defaults %q; %s %s's (go %s%s) are %q", dir, got, pin.Module, pin.Version, up.Go.Version, godebugLines(up), want)
		}
	}
}

func godebugLines(f *modfile.File) string {
	var s string
	for _, g := range f.Godebug {
		s += ", godebug " + g.Key + "=" + g.Value
	}
	return s
}
