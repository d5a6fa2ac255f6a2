package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"
)

// Builder builds the bundle's components for windows/amd64.
type Builder struct {
	// Root is the repository's root.
	Root string
	// Cache holds built components and generated wrapper modules
	// (~/.cache/capwin/bundle).
	Cache string
	// KubernetesVersion is the kubelet's, kube-proxy's and kubeadm's.
	KubernetesVersion string
	// CapwinVersion names capwin-node's version in the manifest.
	CapwinVersion string
	// GoCache, when set, is the go command's build cache for the builds
	// (a fresh one proves the builds reproducible); the user's otherwise.
	GoCache string
	// NoReuse builds every component even when the cache holds it.
	NoReuse bool
	// Scratch is this run's directory for what is not cached
	// (capwin-node); the caller removes it.
	Scratch string
	// Log gets the go command's output and what is built.
	Log io.Writer
}

var kubeVersionPattern = regexp.MustCompile(`^v1\.(\d+)\.(\d+)$`)

// Built is a component built into the cache.
type Built struct {
	Component
	// Path is the program's file in the cache.
	Path string
	// Version is the component module's version.
	Version string
}

// Build builds c (or finds it built with the same inputs) and returns it.
func (b *Builder) Build(ctx context.Context, c Component) (*Built, error) {
	dir, pkg, version, err := b.source(ctx, c)
	if err != nil {
		return nil, err
	}
	ldflags := "-s -w -buildid="
	if c.Kubernetes {
		m := kubeVersionPattern.FindStringSubmatch(b.KubernetesVersion)
		// Kubernetes' own builds stamp both version packages
		// (hack/lib/version.sh); client-go's names the User-Agent.
		for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
			ldflags += fmt.Sprintf(" -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=1 -X %[1]s.gitMinor=%[3]s -X %[1]s.gitTreeState=clean", pkg, b.KubernetesVersion, m[1])
		}
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags}
	key, err := b.key(ctx, c, dir, args)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(b.Cache, "bin", key, filepath.Base(c.File))
	if c.Wrapper == "" {
		// capwin-node is built from the work tree, which the key does not
		// cover: built every run, into this run's own directory.
		if b.Scratch == "" {
			if err := os.MkdirAll(b.Cache, 0o755); err != nil {
				return nil, err
			}
			if b.Scratch, err = os.MkdirTemp(b.Cache, "run-"); err != nil {
				return nil, err
			}
		}
		out = filepath.Join(b.Scratch, filepath.Base(c.File))
	} else if _, err := os.Stat(out); err == nil && !b.NoReuse {
		return &Built{Component: c, Path: out, Version: version}, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	_ = f.Close()
	fmt.Fprintf(b.Log, "building %s (%s %s) for windows/amd64\n", c.Name, c.Module, version)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", tmp, pkg)...)
	cmd.Dir = dir
	cmd.Env = b.env()
	cmd.Stdout, cmd.Stderr = b.Log, b.Log
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("building %s (%s): %w", c.Name, pkg, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	return &Built{Component: c, Path: out, Version: version}, nil
}

// env is the builds' environment: windows/amd64 without cgo, the modules
// as their go.mod and go.sum pin them (the go command checks every
// download against go.sum), no workspace, no VCS stamping.
func (b *Builder) env() []string {
	env := append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "GOAMD64=v1", "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off", "GOEXPERIMENT=", "GOFIPS140=off")
	if b.GoCache != "" {
		env = append(env, "GOCACHE="+b.GoCache)
	}
	return env
}

// source is the directory to build c in, its package, and its module's
// version.
func (b *Builder) source(ctx context.Context, c Component) (dir, pkg, version string, err error) {
	if c.Wrapper == "" {
		return filepath.Join(b.Root, "node-components"), "./cmd/capwin-node", b.CapwinVersion, nil
	}
	pins, err := Pins(b.Root)
	if err != nil {
		return "", "", "", err
	}
	pin := pins[c.Wrapper]
	dir = filepath.Join(b.Root, c.Wrapper)
	if c.Kubernetes && pin.Version != b.KubernetesVersion {
		if dir, err = b.kubernetesModule(ctx); err != nil {
			return "", "", "", err
		}
		return dir, c.Package, b.KubernetesVersion, nil
	}
	return dir, c.Package, pin.Version, nil
}

// key identifies a build by everything it depends on: the go command's
// version, the build's flags, the component, and the wrapper module's
// go.mod and go.sum (which fix every source).
func (b *Builder) key(ctx context.Context, c Component, dir string, args []string) (string, error) {
	h := sha256.New()
	// The go command's settings as the build sees them, in its directory
	// (a toolchain the module's go line switches to included); a setting
	// made with go env -w that the environment cannot clear is refused.
	cmd := exec.CommandContext(ctx, "go", "env", "-json", "GOVERSION", "GOEXPERIMENT", "GOFIPS140", "GOAMD64", "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS")
	cmd.Dir, cmd.Env = dir, b.env()
	settings, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env in %s: %w", dir, err)
	}
	var env map[string]string
	if err := json.Unmarshal(settings, &env); err != nil {
		return "", err
	}
	if env["GOEXPERIMENT"] != "" || env["GOFIPS140"] != "off" {
		return "", fmt.Errorf("the go command's GOEXPERIMENT=%q and GOFIPS140=%q (go env -w?) would change the bundle's programs: unset them", env["GOEXPERIMENT"], env["GOFIPS140"])
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%q\x00%q\x00", bytes.TrimSpace(settings), c.Name, c.Package, args, b.env()[len(os.Environ()):])
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// kubernetesModule writes, in the cache, a wrapper module for a
// Kubernetes version other than the one hack/kubernetes pins: it
// requires k8s.io/kubernetes at that version and replaces each staging
// module (the `=> ./staging/...` lines of its go.mod) with the published
// v0 version of the same minor and patch. The go command fills go.sum,
// checking every module against the checksum database.
func (b *Builder) kubernetesModule(ctx context.Context) (string, error) {
	m := kubeVersionPattern.FindStringSubmatch(b.KubernetesVersion)
	if m == nil {
		return "", fmt.Errorf("the Kubernetes version %q must be v1.MINOR.PATCH", b.KubernetesVersion)
	}
	staging := "v0." + m[1] + "." + m[2]
	dir := filepath.Join(b.Cache, "modules", "kubernetes-"+b.KubernetesVersion)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir, nil
	}
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", "k8s.io/kubernetes@"+b.KubernetesVersion)
	dl.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	dl.Dir = os.TempDir()
	out, err := dl.Output()
	if err != nil {
		return "", fmt.Errorf("downloading k8s.io/kubernetes@%s: %w", b.KubernetesVersion, err)
	}
	var info struct{ GoMod, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("downloading k8s.io/kubernetes@%s: %w", b.KubernetesVersion, err)
	}
	if info.Error != "" {
		return "", fmt.Errorf("downloading k8s.io/kubernetes@%s: %s", b.KubernetesVersion, info.Error)
	}
	upstream, err := ReadGoMod(info.GoMod)
	if err != nil {
		return "", err
	}
	f := &modfile.File{}
	if err := f.AddModuleStmt("github.com/capwin/capwin/hack/kubernetes"); err != nil {
		return "", err
	}
	if err := f.AddGoStmt(upstream.Go.Version); err != nil {
		return "", err
	}
	if err := f.AddRequire("k8s.io/kubernetes", b.KubernetesVersion); err != nil {
		return "", err
	}
	// The programs run with the runtime defaults of the release's own
	// go.mod, not of this wrapper's.
	if err := f.AddGodebug("default", "go"+strings.Join(strings.Split(upstream.Go.Version, ".")[:2], ".")); err != nil {
		return "", err
	}
	for _, g := range upstream.Godebug {
		if err := f.AddGodebug(g.Key, g.Value); err != nil {
			return "", err
		}
	}
	for _, r := range upstream.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") {
			if err := f.AddReplace(r.Old.Path, "", r.Old.Path, staging); err != nil {
				return "", err
			}
		}
	}
	var tools []string
	for _, c := range Components {
		if c.Kubernetes {
			if err := f.AddTool(c.Package); err != nil {
				return "", err
			}
			tools = append(tools, c.Package)
		}
	}
	text, err := f.Format()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), text, 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(b.Log, "resolving k8s.io/kubernetes %s for windows/amd64 in %s\n", b.KubernetesVersion, dir)
	list := exec.CommandContext(ctx, "go", append([]string{"list", "-deps"}, tools...)...)
	list.Dir = dir
	list.Env = append(b.env(), "GOFLAGS=-mod=mod")
	list.Stdout, list.Stderr = io.Discard, b.Log
	if err := list.Run(); err != nil {
		return "", fmt.Errorf("resolving k8s.io/kubernetes %s for windows/amd64: %w", b.KubernetesVersion, err)
	}
	return dir, os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
}
