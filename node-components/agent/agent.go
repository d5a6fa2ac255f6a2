package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/capwin/capwin/node-components/exitcode"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// Exit codes of capwin-node (package exitcode says what each means; the
// bootstrap stub acts on join's).
const (
	ExitOK     = exitcode.OK
	ExitFailed = exitcode.Failed
	ExitUsage  = exitcode.Usage
	ExitRetry  = exitcode.Retry
)

// ControlPlane is what the agent asks of the cluster it joins.
type ControlPlane interface {
	// Discover does kubeadm's token discovery and returns what it proved.
	// A *discovery.Error that may clear up (discovery.Retryable) fails
	// the join retryably.
	Discover(ctx context.Context, join nodeconfig.Join) (*Discovered, error)
	// WaitForNode returns once the Node exists, read with the kubelet's own
	// kubeconfig (files it names are read with readFile).
	WaitForNode(ctx context.Context, kubeconfig []byte, readFile func(string) ([]byte, error), nodeName string) error
}

// Discovered is the outcome of discovery.
type Discovered struct {
	// Server is the API server URL the node uses.
	Server string
	// CACert is the PEM of the cluster CA, pinned by the configuration's
	// CA hashes.
	CACert []byte
	// KubeletConfig is the cluster's KubeletConfiguration (YAML).
	KubeletConfig []byte
}

// Agent runs the agent's commands on one host.
type Agent struct {
	Host         host.Host
	ControlPlane ControlPlane
	// Log receives the agent's log lines; they are also appended to
	// layout.AgentLog on the host.
	Log io.Writer
	// Reporters receive the join's progress after every phase change.
	Reporters []Reporter
	// ClusterProgress, when set, makes a reporter to the cluster that
	// writes to ConfigMap configMap (the configuration's
	// join.progressConfigMap; never called when that is empty) with the
	// server, CA and token of bootstrapKubeconfig: the kubelet's, once
	// discovery wrote it; the join then also reports there, until it
	// completes (ReportToCluster). A failure before discovery, and a CA
	// that does not match the pin, are reported too (join.go says when).
	ClusterProgress func(bootstrapKubeconfig []byte, configMap string) (Reporter, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// NodeTimeout bounds each wait for the kubelet: its TLS bootstrap and
	// the Node's registration, flannel's network (DefaultNodeTimeout when
	// zero).
	NodeTimeout time.Duration
	// PollInterval is how often waits look again (1 s when zero).
	PollInterval time.Duration

	// afterPhase, for tests, runs after a phase's work and before it is
	// recorded; an error stops the join there as a crash would.
	afterPhase func(phase string) error

	logMu sync.Mutex
}

func (a *Agent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// DefaultNodeTimeout is Agent.NodeTimeout when it is not set.
const DefaultNodeTimeout = 10 * time.Minute

func (a *Agent) nodeTimeout() time.Duration {
	if a.NodeTimeout > 0 {
		return a.NodeTimeout
	}
	return DefaultNodeTimeout
}

func (a *Agent) pollInterval() time.Duration {
	if a.PollInterval > 0 {
		return a.PollInterval
	}
	return time.Second
}

// PhaseError is a failed phase: which one, why, and whether running again
// may succeed.
type PhaseError struct {
	Phase     string
	Err       error
	Retryable bool
}

func (e *PhaseError) Error() string { return fmt.Sprintf("phase %s: %v", e.Phase, e.Err) }
func (e *PhaseError) Unwrap() error { return e.Err }

// ExitCode maps an error of Join to the process's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var pe *PhaseError
	if errors.As(err, &pe) && pe.Retryable {
		return ExitRetry
	}
	return ExitFailed
}

// retryable marks an error that running the phase again may get past.
type retryable struct{ error }

func (r retryable) Unwrap() error { return r.error }

// Retryable wraps err so that the phase failing with it is retryable.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryable{err}
}

func isRetryable(err error) bool {
	var r retryable
	return errors.As(err, &r) || errors.Is(err, context.DeadlineExceeded)
}
