// Command bundle builds capwin's Windows node bundle (make bundle) and
// checks it (make bundle-verify): every component of Components for
// windows/amd64 from the module versions its wrapper module
// (hack/kubernetes, hack/bundle/modules/*) pins, with the sources the go command downloads from the module
// proxy (GOPROXY) and checks against go.sum when it downloads them.
//
//	bundle [--kubernetes-version v1.36.3] [--out out/bundle]
//	verify [--kubernetes-version v1.36.3] [--out out/bundle]
//
// bundle writes capwin-node-bundle-<k8s>-windows-amd64.zip (manifest.json
// and the files capwin-node install lays out), its SHA-256 as sha256sum
// writes it (.zip.sha256, which the image definitions read), the manifest
// beside it, and a CycloneDX SBOM. Built programs are kept in ~/.cache/capwin/bundle by
// the hash of everything they are built from, so a second run only
// rebuilds capwin-node (from the work tree) and assembles. verify builds every component again in a fresh build cache,
// checks each program (PE32+, AMD64, console subsystem, the pinned module
// in its build information), and compares the hashes with the bundle's
// manifest: equal hashes mean the build is reproducible.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/capwin/capwin/node-components/bundle"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "bundle" && args[0] != "verify") {
		return errors.New("usage: bundle bundle|verify [--kubernetes-version vX.Y.Z] [--out DIR] [--root DIR]")
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	root := fs.String("root", "../..", "the repository's root")
	out := fs.String("out", "", "where the bundle goes (ROOT/out/bundle when empty)")
	k8s := fs.String("kubernetes-version", "", "the Kubernetes version of the kubelet, kube-proxy and kubeadm (the one hack/kubernetes pins when empty)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	rootDir, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(rootDir, "out", "bundle")
	}
	b := &Builder{Root: rootDir, Cache: cacheDir(), KubernetesVersion: *k8s, CapwinVersion: capwinVersion(ctx, rootDir), Log: os.Stderr}
	if b.KubernetesVersion == "" {
		pins, err := Pins(rootDir)
		if err != nil {
			return err
		}
		b.KubernetesVersion = pins[KubernetesWrapper].Version
	}
	if !kubeVersionPattern.MatchString(b.KubernetesVersion) {
		return fmt.Errorf("--kubernetes-version %q must be v1.MINOR.PATCH", b.KubernetesVersion)
	}
	defer func() {
		if b.Scratch != "" {
			_ = os.RemoveAll(b.Scratch)
		}
	}()
	if cmd == "verify" {
		return verify(ctx, b, *out)
	}
	start := time.Now()
	built, err := buildAll(ctx, b)
	if err != nil {
		return err
	}
	o, err := Assemble(*out, b.KubernetesVersion, built)
	if err != nil {
		return err
	}
	return report(o, start)
}

func buildAll(ctx context.Context, b *Builder) ([]*Built, error) {
	var built []*Built
	for _, c := range Components {
		r, err := b.Build(ctx, c)
		if err != nil {
			return nil, err
		}
		if err := CheckBinary(r); err != nil {
			return nil, err
		}
		built = append(built, r)
	}
	return built, nil
}

func report(o *Outputs, start time.Time) error {
	data, err := os.ReadFile(o.Manifest)
	if err != nil {
		return err
	}
	m, err := bundle.Parse(data)
	if err != nil {
		return err
	}
	var total int64
	for _, f := range m.Files {
		fmt.Printf("%-38s %-28s %9.1f MB  %s\n", f.Name, f.Version, float64(f.Size)/1e6, f.SHA256)
		total += f.Size
	}
	zi, err := os.Stat(o.Zip)
	if err != nil {
		return err
	}
	zipSum, _, err := hashFile(o.Zip)
	if err != nil {
		return err
	}
	fmt.Printf("%d files, %.1f MB; %s: %.1f MB, sha256 %s (%s)\n%s\n%s\n(%s)\n", len(m.Files), float64(total)/1e6, o.Zip, float64(zi.Size())/1e6, zipSum, filepath.Base(o.ZipSHA256), o.Manifest, o.SBOM, time.Since(start).Round(time.Second))
	return nil
}

// verify rebuilds every component with a fresh build cache and checks the
// results against the bundle make bundle wrote.
func verify(ctx context.Context, b *Builder, out string) error {
	start := time.Now()
	base := filepath.Join(out, BaseName(b.KubernetesVersion))
	data, err := os.ReadFile(base + ".manifest.json")
	if err != nil {
		return fmt.Errorf("%w: run make bundle first", err)
	}
	want, err := bundle.Parse(data)
	if err != nil {
		return err
	}
	if err := CheckZip(base+".zip", data, want); err != nil {
		return err
	}
	// The module cache is shared with the first build: its extracted
	// sources are checked against their recorded hashes first.
	if err := modVerify(ctx, b); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "capwin-bundle-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck
	b.GoCache, b.Cache, b.NoReuse = filepath.Join(tmp, "gocache"), filepath.Join(tmp, "cache"), true
	built, err := buildAll(ctx, b)
	if err != nil {
		return err
	}
	got, err := Manifest(b.KubernetesVersion, built)
	if err != nil {
		return err
	}
	if diff := CompareManifests(want, got); diff != "" {
		return fmt.Errorf("a second build in a fresh build cache differs from %s.manifest.json: %s", base, diff)
	}
	fmt.Printf("%s: every file matches its manifest; a second build in a fresh build cache gave the same %d hashes (%s)\n", base+".zip", len(got.Files), time.Since(start).Round(time.Second))
	return nil
}

// modVerify runs go mod verify in every wrapper module.
func modVerify(ctx context.Context, b *Builder) error {
	seen := map[string]bool{}
	for _, c := range Components {
		if c.Wrapper == "" || seen[c.Wrapper] {
			continue
		}
		seen[c.Wrapper] = true
		dir, _, _, err := b.source(ctx, c)
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, "go", "mod", "verify")
		cmd.Dir, cmd.Env = dir, b.env()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod verify in %s: %w\n%s", dir, err, out)
		}
	}
	return nil
}

// CompareManifests says how two manifests differ, or "" when they list
// the same files with the same hashes.
func CompareManifests(a, b *bundle.Manifest) string {
	var diffs []string
	files := map[string]bundle.File{}
	for _, f := range a.Files {
		files[f.Name] = f
	}
	for _, f := range b.Files {
		o, ok := files[f.Name]
		switch {
		case !ok:
			diffs = append(diffs, f.Name+" is new")
		case o.SHA256 != f.SHA256 || o.Size != f.Size:
			diffs = append(diffs, fmt.Sprintf("%s: %s (%d bytes), then %s (%d bytes)", f.Name, o.SHA256, o.Size, f.SHA256, f.Size))
		}
		delete(files, f.Name)
	}
	for n := range files {
		diffs = append(diffs, n+" is missing")
	}
	return strings.Join(diffs, "; ")
}

func cacheDir() string {
	if d := os.Getenv("CAPWIN_CACHE"); d != "" {
		return filepath.Join(d, "bundle")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "capwin", "bundle")
	}
	return filepath.Join(os.TempDir(), "capwin", "bundle")
}

// capwinVersion names the source of capwin-node: git describe of the
// repository, or "dev" outside a git checkout.
func capwinVersion(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil || len(strings.TrimSpace(string(out))) == 0 {
		return "dev"
	}
	return strings.TrimSpace(string(out))
}
