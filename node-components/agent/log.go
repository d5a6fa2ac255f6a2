package agent

import (
	"fmt"
	"os"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
)

// logf writes one log line to Log and appends it to the agent's log on the
// host. Callers never pass a token, a key or a file's content.
func (a *Agent) logf(format string, args ...any) {
	line := fmt.Sprintf("%s %s\n", a.now().UTC().Format("2006-01-02T15:04:05.000Z"), fmt.Sprintf(format, args...))
	a.logMu.Lock()
	defer a.logMu.Unlock()
	if a.Log != nil {
		_, _ = fmt.Fprint(a.Log, line) // best effort
	}
	appendFile(a.Host.FS(), layout.AgentLog, line)
}

// appendFile appends to a file through the host's file system, when it can
// be reached as a local path.
func appendFile(fsys host.FS, path, line string) {
	op, err := fsys.OSPath(path)
	if err != nil {
		return
	}
	if err := fsys.MkdirAll(layout.StateDir); err != nil {
		return
	}
	f, err := os.OpenFile(op, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()     //nolint:errcheck
	f.WriteString(line) //nolint:errcheck
}
