package windows

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenServiceLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "logs", "kubelet.log")

	// The directory is made; the log is appended to.
	for _, line := range []string{"one\n", "two\n"} {
		f, err := openServiceLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("log = %q, %v; want both lines", b, err)
	}

	// A log over maxLogSize (sparse here) moves to .1, replacing the one
	// there; a new log starts.
	if err := os.WriteFile(path+".1", []byte("older\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, maxLogSize+1); err != nil {
		t.Fatal(err)
	}
	f, err := openServiceLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the log after rotation: %v, %v; want a new, empty one", fi, err)
	}
	if fi, err := os.Stat(path + ".1"); err != nil || fi.Size() != maxLogSize+1 {
		t.Errorf("the log moved aside: %v, %v; want the %d bytes of the old one", fi, err, maxLogSize+1)
	}

	// A log of exactly maxLogSize stays.
	if err := os.Truncate(path, maxLogSize); err != nil {
		t.Fatal(err)
	}
	f, err = openServiceLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != maxLogSize {
		t.Errorf("a log of maxLogSize: %v, %v; want it kept", fi, err)
	}
}

func TestOpenServiceLogSaysWhyItCannotRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubelet.log")
	// path.1 is a non-empty directory: the log cannot be moved onto it.
	if err := os.MkdirAll(filepath.Join(path+".1", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, maxLogSize+1); err != nil {
		t.Fatal(err)
	}
	f, err := openServiceLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// What openServiceLog appended after the old log's bytes.
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	if _, err := f.Seek(maxLogSize+1, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if tail := string(b); !strings.Contains(tail, "capwin-node: moving log "+path) {
		t.Errorf("the log goes on without saying why it was not moved: %q", tail)
	}
}
