package windows

// A service's log file, which the service host opens with package os only:
// it builds, and is tested, on any OS.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// maxLogSize is the size over which a service's log is moved to FILE.1 when
// the service starts.
const maxLogSize = 100 << 20

// openServiceLog opens a service's log for appending, creating its
// directory; a log over maxLogSize is first moved to path.1, replacing the
// one there. A log that cannot be moved is appended to, and says so.
func openServiceLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the directory of log %s: %w", path, err)
	}
	rotateErr := rotateLog(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log %s: %w", path, err)
	}
	if rotateErr != nil {
		fmt.Fprintf(f, "%s capwin-node: %v\n", time.Now().UTC().Format(time.RFC3339), rotateErr)
	}
	return f, nil
}

func rotateLog(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the size of log %s: %w", path, err)
	}
	if fi.Size() <= maxLogSize {
		return nil
	}
	// os.Rename replaces an existing path.1 (MoveFileEx with
	// MOVEFILE_REPLACE_EXISTING).
	if err := os.Rename(path, path+".1"); err != nil {
		return fmt.Errorf("moving log %s (%d bytes) aside: %w", path, fi.Size(), err)
	}
	return nil
}
