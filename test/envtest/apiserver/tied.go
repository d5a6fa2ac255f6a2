package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// tiedWrapper runs the binary it names with its arguments, in a process
// group of its own (set -m), so that the TERM envtest sends the wrapper's
// group reaches the binary once, passed on by the wrapper; the binary's
// status is the wrapper's. Each second, or at once when the binary exits,
// it looks at its own parent: when that is no longer the process that
// started it (the test binary ended and the wrapper was handed to another),
// it kills the binary and removes the data and certificate directories
// made for it (envtest's k8s_test_framework_*, Start's capwin-apiserver-*),
// which the environment's stop would have removed. %[1]s is the binary, quoted for bash.
const tiedWrapper = `#!/usr/bin/env bash
# Written by capwin's test/envtest/apiserver: runs %[1]s and kills it once
# the process that started this one (a test binary) has gone, however it
# ended.
set -m
parent=$PPID
%[1]s "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
current_parent() {
  local stat
  if read -r stat 2>/dev/null </proc/$$/stat; then
    stat=${stat##*) }
    stat=${stat#* }
    echo "${stat%%%% *}"
  elif kill -0 "$parent" 2>/dev/null; then
    echo "$parent"
  fi
}
while kill -0 "$child" 2>/dev/null; do
  if [[ "$(current_parent)" != "$parent" ]]; then
    kill -KILL -- "-$child" 2>/dev/null || kill -KILL "$child" 2>/dev/null
    for arg in "$@"; do
      case "$arg" in
        --data-dir=*/k8s_test_framework_* | --cert-dir=*/k8s_test_framework_* | --cert-dir=*/capwin-apiserver-*) rm -rf -- "${arg#*=}" ;;
      esac
    done
    exit 137
  fi
  sleep 1 &
  sleeper=$!
  wait -n "$child" "$sleeper" 2>/dev/null
  kill "$sleeper" 2>/dev/null
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
	if _, err := exec.LookPath("bash"); err != nil {
		return "", fmt.Errorf("the envtest control plane runs under a bash wrapper that stops it with its test: %w", err)
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
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(fmt.Sprintf(tiedWrapper, bashQuote(binary))), 0o755); err != nil { //nolint:gosec // an executable script
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

// bashQuote quotes s as one word for bash: in single quotes, where nothing
// is expanded, each single quote of s closing the quotes, escaped, and
// opening them again.
func bashQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cacheDir is capwin's cache: $CAPWIN_CACHE, else capwin under the user's
// cache directory ($XDG_CACHE_HOME or ~/.cache on Linux, as
// hack/envtest-assets.sh finds it there).
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
