package hosttest

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
)

// readBack fails unless a file holds want.
func readBack(t *testing.T, f host.FS, path, want string) {
	t.Helper()
	got, err := f.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}

func wantExists(t *testing.T, f host.FS, path string, want bool) {
	t.Helper()
	if ok, err := f.Exists(path); err != nil || ok != want {
		t.Errorf("Exists(%s) = %v, %v; want %v", path, ok, err, want)
	}
}

func write(t *testing.T, f host.FS, path, data string, private bool) {
	t.Helper()
	if err := f.WriteFile(path, []byte(data), private); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
}

// wantPrivate fails unless the host's private file at path is.
func (s suite) wantPrivate(t *testing.T, f host.FS, path string) {
	t.Helper()
	op, err := f.OSPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckPrivate(op); err != nil {
		t.Errorf("%s, written private: %v", path, err)
	}
}

func (s suite) fs(t *testing.T) {
	s.runAll(t, []rule{
		// join writes every file into directories that may not exist yet,
		// and writes them again on every run.
		{"WriteFileCreatesItsDirectoryAndReplacesTheFile", func(t *testing.T, h host.Host) {
			f := h.FS()
			dir := host.Join(s.Dir(t, h), "a", "b")
			path := host.Join(dir, "kubelet.conf")
			write(t, f, path, "one", false)
			readBack(t, f, path, "one")
			write(t, f, path, "two, longer than one", false)
			readBack(t, f, path, "two, longer than one")
			write(t, f, path, "", false)
			readBack(t, f, path, "")
			// A temporary file is renamed into place: none is left.
			if names, err := f.ReadDir(dir); err != nil || !slices.Equal(names, []string{"kubelet.conf"}) {
				t.Errorf("the directory holds %q, %v; want only kubelet.conf", names, err)
			}
			if n, err := f.Size(path); err != nil || n != 0 {
				t.Errorf("Size = %d, %v; want 0", n, err)
			}
		}},
		// Keys, tokens and the configuration's files are readable by
		// SYSTEM and Administrators only, also when they replace a file
		// that was not private.
		{"PrivateFilesAreForSystemAndAdministratorsOnly", func(t *testing.T, h host.Host) {
			f := h.FS()
			dir := s.Dir(t, h)
			key := host.Join(dir, "pki", "kubelet.key")
			write(t, f, key, "secret", true)
			s.wantPrivate(t, f, key)
			readBack(t, f, key, "secret")
			write(t, f, key, "secret, again", true)
			s.wantPrivate(t, f, key)
			open := host.Join(dir, "was-public")
			write(t, f, open, "public", false)
			write(t, f, open, "secret", true)
			s.wantPrivate(t, f, open)
			readBack(t, f, open, "secret")
		}},
		// The join's state is read with errors.Is(err, fs.ErrNotExist): a
		// first run finds none.
		{"ReadFileOfAMissingFileIsFsErrNotExist", func(t *testing.T, h host.Host) {
			path := host.Join(s.Dir(t, h), "missing.json")
			if _, err := h.FS().ReadFile(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
			}
			if _, err := h.FS().Size(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Size of a missing file: %v, want fs.ErrNotExist", err)
			}
		}},
		{"ExistsSaysWhetherAFileOrDirectoryIs", func(t *testing.T, h host.Host) {
			f := h.FS()
			dir := s.Dir(t, h)
			path := host.Join(dir, "sub", "file")
			wantExists(t, f, path, false)
			write(t, f, path, "x", false)
			wantExists(t, f, path, true)
			wantExists(t, f, host.Join(dir, "sub"), true)
			if err := f.MkdirAll(host.Join(dir, "made", "deep")); err != nil {
				t.Fatal(err)
			}
			wantExists(t, f, host.Join(dir, "made", "deep"), true)
		}},
		// reset and the join's clean-ups remove what may already be gone.
		{"RemoveAndRemoveAllOfWhatIsMissingSucceed", func(t *testing.T, h host.Host) {
			f := h.FS()
			dir := s.Dir(t, h)
			missing := host.Join(dir, "missing")
			if err := f.Remove(missing); err != nil {
				t.Errorf("Remove of a missing file: %v", err)
			}
			if err := f.RemoveAll(missing); err != nil {
				t.Errorf("RemoveAll of a missing tree: %v", err)
			}
			if names, err := f.ReadDir(missing); err != nil || len(names) != 0 {
				t.Errorf("ReadDir of a missing directory: %q, %v; want none", names, err)
			}
		}},
		{"RemoveRemovesAFileOrAnEmptyDirectoryAndRemoveAllATree", func(t *testing.T, h host.Host) {
			f := h.FS()
			dir := s.Dir(t, h)
			file := host.Join(dir, "tree", "sub", "file")
			write(t, f, file, "x", false)
			if err := f.Remove(host.Join(dir, "tree", "sub")); err == nil {
				t.Error("Remove of a directory that is not empty succeeded")
			}
			if err := f.Remove(file); err != nil {
				t.Fatal(err)
			}
			wantExists(t, f, file, false)
			if err := f.Remove(host.Join(dir, "tree", "sub")); err != nil {
				t.Errorf("Remove of an empty directory: %v", err)
			}
			write(t, f, file, "x", true)
			if err := f.RemoveAll(host.Join(dir, "tree")); err != nil {
				t.Fatal(err)
			}
			wantExists(t, f, host.Join(dir, "tree"), false)
		}},
		// Every path the agent uses is an absolute Windows path of its
		// layout; anything else is a mistake, not a file elsewhere.
		{"OSPathTakesAbsoluteWindowsPathsOnly", func(t *testing.T, h host.Host) {
			f := h.FS()
			dir := s.Dir(t, h)
			for _, bad := range []string{`relative\file`, `\rooted\file`, host.Join(dir, "..", "escape"), dir[:2] + "file"} {
				if op, err := f.OSPath(bad); err == nil {
					t.Errorf("OSPath(%q) = %q, want an error", bad, op)
				}
				if err := f.WriteFile(bad, []byte("x"), false); err == nil {
					t.Errorf("WriteFile(%q) succeeded", bad)
				}
			}
			if op, err := f.OSPath(host.Join(dir, "file")); err != nil || op == "" {
				t.Errorf("OSPath of an absolute path: %q, %v", op, err)
			}
		}},
		{"ReadDirListsNames", func(t *testing.T, h host.Host) {
			f := h.FS()
			dir := s.Dir(t, h)
			for _, n := range []string{"b.conf", "a.conf"} {
				write(t, f, host.Join(dir, "d", n), n, false)
			}
			if err := f.MkdirAll(host.Join(dir, "d", "c")); err != nil {
				t.Fatal(err)
			}
			names, err := f.ReadDir(host.Join(dir, "d"))
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(names, strings.Compare)
			if !slices.Equal(names, []string{"a.conf", "b.conf", "c"}) {
				t.Errorf("ReadDir = %q", names)
			}
		}},
	})
}
