package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// FS is the machine's file system, addressed by absolute Windows paths
// (C:\etc\kubernetes\kubelet.conf).
type FS interface {
	ReadFile(path string) ([]byte, error)
	// WriteFile writes a file atomically (a temporary file renamed into
	// place), creating its directory. Private files (keys, tokens) are
	// readable by SYSTEM and Administrators only.
	WriteFile(path string, data []byte, private bool) error
	// Remove removes a file or an empty directory; a missing one is not an
	// error.
	Remove(path string) error
	// RemoveAll removes a tree; a missing one is not an error.
	RemoveAll(path string) error
	MkdirAll(path string) error
	// Exists reports whether a file or directory exists.
	Exists(path string) (bool, error)
	// ReadDir lists a directory's entries by name; a missing directory has
	// none.
	ReadDir(path string) ([]string, error)
	// Size returns a file's size.
	Size(path string) (int64, error)
	// OSPath is the path the operating system uses for a Windows path, for
	// libraries that open files themselves (CNI's host-local store).
	OSPath(path string) (string, error)
}

var drivePath = regexp.MustCompile(`^([A-Za-z]):\\`)

// DirFS is an FS on the local disk. With an empty Root it uses Windows
// paths as they are (the real host); with a Root, C:\a\b is Root/C/a/b, so
// the in-memory host and tests keep a Windows layout in a directory.
type DirFS struct {
	Root string
	// Protect, when set, restricts a private file to SYSTEM and
	// Administrators (host/windows sets it). Elsewhere private files get
	// mode 0600.
	Protect func(osPath string) error
}

// OSPath maps a Windows path to the local one.
func (d DirFS) OSPath(p string) (string, error) {
	m := drivePath.FindStringSubmatch(p)
	if m == nil {
		return "", fmt.Errorf("%q is not an absolute Windows path", p)
	}
	for _, part := range strings.Split(p[3:], `\`) {
		if part == ".." {
			return "", fmt.Errorf("%q contains a .. element", p)
		}
	}
	if d.Root == "" {
		return p, nil
	}
	rest := strings.Split(strings.TrimRight(p[3:], `\`), `\`)
	return filepath.Join(append([]string{d.Root, strings.ToUpper(m[1])}, rest...)...), nil
}

// ReadFile reads a file.
func (d DirFS) ReadFile(p string) ([]byte, error) {
	op, err := d.OSPath(p)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(op)
}

// WriteFile writes a file atomically; a private file gets mode 0600 and, with Protect, an ACL for SYSTEM and Administrators.
func (d DirFS) WriteFile(p string, data []byte, private bool) error {
	op, err := d.OSPath(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(op), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if private {
		mode = 0o600
	}
	tmp, err := os.CreateTemp(filepath.Dir(op), "."+filepath.Base(op)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close() //nolint:errcheck
		return err
	}
	if private && d.Protect != nil {
		// Restricted before the secret is written, so it is never readable.
		tmp.Close() //nolint:errcheck
		if err := d.Protect(tmp.Name()); err != nil {
			return fmt.Errorf("restricting %s: %w", p, err)
		}
		if tmp, err = os.OpenFile(tmp.Name(), os.O_WRONLY|os.O_TRUNC, mode); err != nil {
			return err
		}
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close() //nolint:errcheck
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close() //nolint:errcheck
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), op)
}

// Remove removes a file or an empty directory.
func (d DirFS) Remove(p string) error {
	op, err := d.OSPath(p)
	if err != nil {
		return err
	}
	if err := os.Remove(op); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// RemoveAll removes a tree.
func (d DirFS) RemoveAll(p string) error {
	op, err := d.OSPath(p)
	if err != nil {
		return err
	}
	return os.RemoveAll(op)
}

// MkdirAll creates a directory and its parents.
func (d DirFS) MkdirAll(p string) error {
	op, err := d.OSPath(p)
	if err != nil {
		return err
	}
	return os.MkdirAll(op, 0o755)
}

// Exists reports whether a file or directory exists.
func (d DirFS) Exists(p string) (bool, error) {
	op, err := d.OSPath(p)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(op)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// ReadDir lists a directory by name.
func (d DirFS) ReadDir(p string) ([]string, error) {
	op, err := d.OSPath(p)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(op)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

// Size returns a file's size.
func (d DirFS) Size(p string) (int64, error) {
	op, err := d.OSPath(p)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(op)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Join joins Windows path elements with backslashes.
func Join(elem ...string) string {
	parts := make([]string, 0, len(elem))
	for i, e := range elem {
		if i > 0 {
			e = strings.TrimLeft(e, `\`)
		}
		if i < len(elem)-1 {
			e = strings.TrimRight(e, `\`)
		}
		if e != "" {
			parts = append(parts, e)
		}
	}
	return strings.Join(parts, `\`)
}
