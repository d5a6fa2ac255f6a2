package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// envtest starts kube-apiserver and etcd in process groups of their own and
// stops them only when a test stops its environment: a test binary that
// times out, panics or is killed leaves them running, each holding ports,
// memory and a data directory (six of them ran on for half an hour after a
// timed-out make test). tiedAssets gives envtest, instead of the binaries,
// wrappers that run them and kill them once the process that started the
// wrapper, the test binary, has gone, however it ended.

// tiedWrapper runs the binary it names with its arguments; a TERM or INT
// (envtest's stop) is passed on, and the binary's status is the wrapper's.
// It polls its parent every second: the wrapper's parent is the test binary,
// as envtest starts it.
const tiedWrapper = `#!/usr/bin/env bash
# Written by capwin's test/envtest/apiserver: runs %[1]s and kills it once
# the process that started this one (a test binary) has gone, however it
# ended.
parent=$PPID
%[1]q "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
while kill -0 "$child" 2>/dev/null; do
  if ! kill -0 "$parent" 2>/dev/null; then
    kill -KILL "$child" 2>/dev/null
    exit 137
  fi
  sleep 1 &
  wait $! 2>/dev/null
done
wait "$child"
`

var tied struct {
	sync.Mutex
	dirs map[string]string
}

// tiedAssets returns a directory that holds tied wrappers of assets'
// kube-apiserver and etcd, and its kubectl as it is. The directory is made
// once per assets directory and script, in capwin's cache, and kept.
func tiedAssets(assets string) (string, error) {
	tied.Lock()
	defer tied.Unlock()
	if dir, ok := tied.dirs[assets]; ok {
		return dir, nil
	}
	abs, err := filepath.Abs(assets)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + tiedWrapper))
	dir := filepath.Join(cacheDir(), "envtest-tied", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		if err := writeTied(abs, dir); err != nil {
			return "", fmt.Errorf("writing envtest's tied binaries into %s: %w", dir, err)
		}
	}
	if tied.dirs == nil {
		tied.dirs = map[string]string{}
	}
	tied.dirs[assets] = dir
	return dir, nil
}

// writeTied writes the wrappers into a temporary directory beside dir and
// renames it into place, so that a test binary running at the same time
// finds the whole directory or none.
func writeTied(assets, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tied-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // gone once renamed
	for _, name := range []string{"kube-apiserver", "etcd"} {
		binary := filepath.Join(assets, name)
		if _, err := os.Stat(binary); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(fmt.Sprintf(tiedWrapper, binary)), 0o755); err != nil { //nolint:gosec // an executable script
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(assets, "kubectl")); err == nil {
		if err := os.Symlink(filepath.Join(assets, "kubectl"), filepath.Join(tmp, "kubectl")); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil { //nolint:gosec // not secret
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test binary wrote it first.
		if _, statErr := os.Stat(filepath.Join(dir, ".complete")); statErr == nil {
			return nil
		}
		return err
	}
	return nil
}

// cacheDir is capwin's cache, as hack/envtest-assets.sh finds it.
func cacheDir() string {
	if dir := os.Getenv("CAPWIN_CACHE"); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "capwin")
	}
	return filepath.Join(os.TempDir(), "capwin-cache")
}

// Descendants returns the processes under pid (its children, theirs, and so
// on), by their /proc entries, with each one's command name; nil where
// /proc cannot be read.
func Descendants(pid int) map[int]string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parents := map[int]int{}
	names := map[int]string{}
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		end := strings.LastIndexByte(string(stat), ')')
		start := strings.IndexByte(string(stat), '(')
		if start < 0 || end < start {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscan(string(stat[end+1:]), &state, &ppid); err != nil {
			continue
		}
		parents[p] = ppid
		names[p] = string(stat[start+1 : end])
	}
	out := map[int]string{}
	for p := range parents {
		for q := parents[p]; q > 1; q = parents[q] {
			if q == pid {
				out[p] = names[p]
				break
			}
			if _, ok := parents[q]; !ok {
				break
			}
		}
	}
	return out
}

// Alive reports whether a process exists (and is not a zombie).
func Alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	end := strings.LastIndexByte(string(stat), ')')
	return end < 0 || !strings.HasPrefix(strings.TrimSpace(string(stat[end+1:])), "Z")
}
