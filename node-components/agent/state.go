package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/report"
)

// State is what the agent remembers of a join, in layout.JoinState: the
// phases that finished, so a reboot or a second run continues after them,
// and the commands that ran, so none runs twice.
type State struct {
	// ConfigHash is the SHA-256 of the node configuration the phases ran
	// with; a new configuration starts the phases over (not the commands).
	ConfigHash string `json:"configHash"`
	// NodeName is the name the node joins as: the configuration's
	// nodeName, or else the computer name, lower case, read when the
	// configuration was first applied. A run with the same configuration
	// uses it again rather than read the computer name anew.
	NodeName string `json:"nodeName,omitempty"`
	// Phases are the phases that finished, in order.
	Phases []PhaseRecord `json:"phases"`
	// Commands are the hashes of the pre- and post-join commands that
	// finished, each with its list and position.
	Commands []string `json:"commands,omitempty"`
	// Environment are the machine environment variables the join set, for
	// reset to remove.
	Environment []string `json:"environment,omitempty"`
	// Joined is set when the join finished; the token is gone by then.
	Joined *time.Time `json:"joined,omitempty"`
}

// PhaseRecord is one finished phase, as the progress report carries it
// (node-components/report).
type PhaseRecord = report.PhaseRecord

func (s *State) done(phase string) bool {
	for _, p := range s.Phases {
		if p.Name == phase {
			return true
		}
	}
	return false
}

func (s *State) ran(command string) bool {
	for _, c := range s.Commands {
		if c == command {
			return true
		}
	}
	return false
}

// LoadState reads the join state; a missing file is an empty state.
func LoadState(fsys host.FS) (*State, error) {
	data, err := fsys.ReadFile(layout.JoinState)
	if errors.Is(err, fs.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", layout.JoinState, err)
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("reading %s: %w (delete it, or run capwin-node reset, to start the join over)", layout.JoinState, err)
	}
	return s, nil
}

func saveState(fsys host.FS, s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := fsys.WriteFile(layout.JoinState, append(data, '\n'), false); err != nil {
		return fmt.Errorf("writing %s: %w", layout.JoinState, err)
	}
	return nil
}
