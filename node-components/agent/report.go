package agent

import (
	"context"
	"encoding/json"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/report"
)

// Progress is the join's state as the agent reports it after every phase
// change: layout.Status on the node, and whatever Reporters carry it off
// the node. Its wire format is node-components/report's, which the
// management side reads without linking the agent.
type Progress = report.Progress

// ProgressState is the join's overall state.
type ProgressState = report.ProgressState

// The join's states.
const (
	ProgressRunning = report.ProgressRunning
	ProgressFailed  = report.ProgressFailed
	ProgressJoined  = report.ProgressJoined
)

// Reporter carries progress off the node. A reporter's failure never fails
// the join: it is logged.
type Reporter interface {
	Name() string
	Report(ctx context.Context, p Progress) error
}

// report writes the progress to layout.Status and hands it to the reporters.
func (a *Agent) report(ctx context.Context, p Progress) {
	if data, err := json.MarshalIndent(p, "", "  "); err == nil {
		if err := a.Host.FS().WriteFile(layout.Status, append(data, '\n'), false); err != nil {
			a.logf("Writing %s failed: %v", layout.Status, err)
		}
	}
	for _, r := range a.Reporters {
		if err := r.Report(ctx, p); err != nil {
			a.logf("Reporting progress through %s failed: %v", r.Name(), err)
		}
	}
}

// ReadProgress reads the last progress written on the host.
func ReadProgress(fsys host.FS) (*Progress, error) {
	data, err := fsys.ReadFile(layout.Status)
	if err != nil {
		return nil, err
	}
	p := &Progress{}
	return p, json.Unmarshal(data, p)
}
