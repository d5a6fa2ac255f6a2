package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// defaultPlatforms are the platforms make image builds.
var defaultPlatforms = []string{"linux/amd64", "linux/arm64"}

// managerPackage is the command the image runs.
const managerPackage = "./cmd/capwin-manager"

type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// variant is the OCI platform variant registries and runtimes expect for
// arm64 (the one Go's default GOARM64 builds for); none for amd64.
func (p platform) variant() string {
	if p.arch == "arm64" {
		return "v8"
	}
	return ""
}

func parsePlatform(s string) (platform, error) {
	goos, arch, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || goos != "linux" || (arch != "amd64" && arch != "arm64") {
		return platform{}, fmt.Errorf("platform %q: want linux/amd64 or linux/arm64", s)
	}
	return platform{os: goos, arch: arch}, nil
}

// buildEnv is the environment of the manager's build: a static binary
// (the image has no libc), every setting that changes the output fixed so
// that the user's go env does not, and the same in make image and the test
// so that one's compile is the other's cache hit.
func buildEnv(p platform) []string {
	return append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch,
		"GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOFIPS140=off", "GOFLAGS=", "GOWORK=off")
}

// buildManager compiles capwin-manager for p into dir, with $GO (go when
// unset), -trimpath and no symbol table nor DWARF (-s -w).
func buildManager(ctx context.Context, root, dir string, p platform) (string, error) {
	out := filepath.Join(dir, "manager-"+p.os+"-"+p.arch)
	cmd := exec.CommandContext(ctx, cmp.Or(os.Getenv("GO"), "go"), "build", "-trimpath", "-ldflags=-s -w", "-o", out, managerPackage)
	cmd.Dir = root
	cmd.Env = buildEnv(p)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s for %s: %w\n%s", managerPackage, p, err, stderr.String())
	}
	return out, nil
}

// sourceDateEpoch is the time written as the image's creation time and
// every file's modification time: SOURCE_DATE_EPOCH if set (the
// reproducible-builds convention), else the commit time of HEAD, so that
// building one commit twice gives the same digests.
func sourceDateEpoch(ctx context.Context, root string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		out, err := exec.CommandContext(ctx, "git", "-C", root, "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("git log -1 in %s for the image's time (set SOURCE_DATE_EPOCH outside a git checkout): %w", root, err)
		}
		s = strings.TrimSpace(string(out))
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("source date epoch %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
