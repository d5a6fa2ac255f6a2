package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const repoRoot = "../.."

// TestImage builds the image as make image does, into a temporary layout,
// and checks what a cluster would run from it. Its cost is two builds of
// the manager (linux/amd64 and linux/arm64): 15 minutes the first time on
// 2 busy cores, more than go test's default -timeout of 10m (make test
// gives 45m), then 30 s, the compiles cached by the go command and shared
// with make image.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the manager for two platforms")
	}
	ctx := t.Context()
	out := filepath.Join(t.TempDir(), "image")
	const ref = "registry.example/capwin/capwin-manager:test"
	// Read before the build, as the build reads it: a commit made while
	// the build runs (minutes) is not the image's.
	created, err := sourceDateEpoch(ctx, repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := run(ctx, repoRoot, out, ref, defaultPlatforms); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the image in %.0f s", time.Since(start).Seconds())

	// index.json: one entry, the multi-platform index, named ref; what
	// crane push reads.
	lp, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json holds %+v, want one OCI image index", top.Manifests)
	}
	if got := top.Manifests[0].Annotations[refNameAnnotation]; got != ref {
		t.Errorf("index.json names the image %q, want %q", got, ref)
	}
	idx, err := lp.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, desc := range im.Manifests {
		p := desc.Platform
		if p == nil {
			t.Fatalf("manifest %s has no platform in the index", desc.Digest)
		}
		name := p.OS + "/" + p.Architecture
		platforms = append(platforms, name)
		t.Run(name, func(t *testing.T) {
			img, err := idx.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img, platform{os: p.OS, arch: p.Architecture}, *p, created)
		})
	}
	if strings.Join(platforms, ",") != strings.Join(defaultPlatforms, ",") {
		t.Errorf("the index holds %v, want %v", platforms, defaultPlatforms)
	}
}

func checkImage(t *testing.T, img v1.Image, want platform, inIndex v1.Platform, created time.Time) {
	t.Helper()
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %q (%v), want %q", mt, err, types.OCIManifestSchema1)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != want.os || cfg.Architecture != want.arch || cfg.Variant != want.variant() || inIndex.Variant != want.variant() {
		t.Errorf("config platform %s/%s/%s, index variant %q, want %s variant %q",
			cfg.OS, cfg.Architecture, cfg.Variant, inIndex.Variant, want, want.variant())
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/manager" {
		t.Errorf("entrypoint %q, want [/manager] (exec form)", got)
	}
	if len(cfg.Config.Cmd) != 0 {
		t.Errorf("cmd %q, want none: the Deployment passes the arguments", cfg.Config.Cmd)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (numeric, non-root)", cfg.Config.User)
	}
	if cfg.RootFS.Type != "layers" || len(cfg.RootFS.DiffIDs) != 1 {
		t.Errorf("rootfs %+v, want type layers and one diff ID", cfg.RootFS)
	}
	if !cfg.Created.Equal(created) {
		t.Errorf("created %s, want the source date %s", cfg.Created, created)
	}

	files := filesOf(t, img, created)
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh", "bin/ash"} {
		if _, ok := files[shell]; ok {
			t.Errorf("the image holds %s", shell)
		}
	}
	// Exactly the binary: no shell, no package manager, nothing else.
	if len(files) != 1 {
		t.Errorf("the image holds %d files, want only manager: %v", len(files), keys(files))
	}
	bin, ok := files["manager"]
	if !ok {
		t.Fatalf("no /manager in the image: %v", keys(files))
	}
	checkBinary(t, bin, want)
}

// filesOf is the image's flattened filesystem, regular files by path; it
// fails on any entry whose owner or time is not the fixed one.
func filesOf(t *testing.T, img v1.Image, mtime time.Time) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(mtime) {
			t.Errorf("%s: owner %d:%d (%q:%q), time %s; want 0:0, no names, %s", name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, mtime)
		}
		if h.Typeflag != tar.TypeReg {
			files[name] = nil
			continue
		}
		if name == "manager" && h.Mode != 0o755 {
			t.Errorf("manager mode %o, want 755", h.Mode)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	return files
}

func checkBinary(t *testing.T, bin []byte, want platform) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/manager: %v", err)
	}
	if bi.Path != "github.com/capwin/capwin/cmd/capwin-manager" {
		t.Errorf("/manager is %q, want github.com/capwin/capwin/cmd/capwin-manager", bi.Path)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, v := range map[string]string{
		"GOOS": want.os, "GOARCH": want.arch, "CGO_ENABLED": "0", "-trimpath": "true",
	} {
		if settings[k] != v {
			t.Errorf("/manager built with %s=%q, want %q", k, settings[k], v)
		}
	}
	// -ldflags is not in the build info of a -trimpath build (go.dev/issue/52372):
	// -s -w is seen in the ELF file instead, which has neither a symbol
	// table nor DWARF.
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/manager: %v", err)
	}
	if m := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[want.arch]; f.Machine != m {
		t.Errorf("/manager is an ELF file for %s, want %s", f.Machine, m)
	}
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("/manager has section %s: not built with -ldflags='-s -w'", s.Name)
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/manager asks for a dynamic loader (PT_INTERP): not static")
		}
	}
	// The public roots the scratch image lacks (cmd/capwin-manager).
	var roots bool
	for _, d := range bi.Deps {
		roots = roots || d.Path == "golang.org/x/crypto/x509roots/fallback"
	}
	if !roots {
		t.Error("/manager does not embed golang.org/x/crypto/x509roots/fallback: it would trust no CA in a scratch image")
	}
}

// TestLayoutReproducible writes the same binaries twice: the digests must
// be equal, as nothing of the build's time or user reaches the image.
func TestLayoutReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "manager")
	if err := os.WriteFile(bin, []byte("not a real binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	created := time.Unix(1790000000, 0).UTC()
	var digests []v1.Hash
	for i := range 2 {
		if i == 1 {
			// A later build at another time of day.
			if err := os.Chtimes(bin, time.Now(), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		var images []platformImage
		for _, p := range []platform{{"linux", "amd64"}, {"linux", "arm64"}} {
			img, err := newImage(bin, p, created)
			if err != nil {
				t.Fatal(err)
			}
			images = append(images, platformImage{platform: p, image: img})
		}
		idx, err := writeLayout(filepath.Join(dir, "out"), "capwin-manager:dev", images)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binary: index %s then %s", digests[0], digests[1])
	}
}

// TestReleaseManifestsUseImage runs make release-manifests with an IMAGE:
// both providers' Deployments must run it, as make image names it.
func TestReleaseManifestsUseImage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	for _, image := range []string{"", "registry.example:5000/capwin/capwin-manager:v0.1.0"} {
		want := image
		if want == "" {
			want = "capwin-manager:dev" // the Makefile's default, config/manager's image
		}
		dir := t.TempDir()
		args := []string{"--no-print-directory", "-C", repoRoot, "release-manifests", "RELEASE_DIR=" + dir}
		if image != "" {
			args = append(args, "IMAGE="+image)
		}
		cmd := exec.CommandContext(context.Background(), "make", args...)
		// Not the jobserver of a make that may have started this test.
		cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make release-manifests: %v\n%s", err, out)
		}
		for _, f := range []string{"infrastructure-components.yaml", "bootstrap-components.yaml"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			var images []string
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
					images = append(images, v)
				}
			}
			if len(images) != 1 || images[0] != want {
				t.Errorf("%s with IMAGE=%q runs %q, want [%s]", f, image, images, want)
			}
		}
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
