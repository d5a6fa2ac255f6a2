package agent

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/alexflint/go-filemutex"

	"github.com/capwin/capwin/node-components/layout"
)

// errBusy is returned when another command holds the node.
var errBusy = errors.New("another capwin-node join, install or reset is running on this node; wait for it to end")

// lock takes the node for one command that changes it: two joins at once
// would each run the commands and overwrite the other's state. The
// operating system releases the lock when the process ends, however it
// ends.
func (a *Agent) lock() (func(), error) {
	fsys := a.Host.FS()
	if err := fsys.MkdirAll(layout.StateDir); err != nil {
		return nil, err
	}
	p, err := fsys.OSPath(layout.AgentLock)
	if err != nil {
		return nil, err
	}
	m, err := filemutex.New(filepath.Clean(p))
	if err != nil {
		return nil, fmt.Errorf("opening the agent's lock: %w", err)
	}
	if err := m.TryLock(); err != nil {
		_ = m.Close()
		return nil, errBusy
	}
	return func() { _ = m.Close() }, nil
}
