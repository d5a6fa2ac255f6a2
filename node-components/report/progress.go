package report

import "time"

// Progress is the join's state as the agent reports it after every phase
// change: layout.Status on the node, and whatever reporters carry it off
// the node (the ConfigMap ConfigMapKey in ConfigMapNamespace).
type Progress struct {
	NodeName string `json:"nodeName"`
	// Phase is the phase running, failed or last finished.
	Phase string `json:"phase"`
	// State is Running, Failed or Joined.
	State   ProgressState `json:"state"`
	Message string        `json:"message,omitempty"`
	// Retryable tells, for Failed, whether running join again may succeed.
	Retryable bool          `json:"retryable,omitempty"`
	Time      time.Time     `json:"time"`
	Phases    []PhaseRecord `json:"phases"`
}

// ProgressState is the join's overall state.
type ProgressState string

// The join's states.
const (
	ProgressRunning ProgressState = "Running"
	ProgressFailed  ProgressState = "Failed"
	ProgressJoined  ProgressState = "Joined"
)

// PhaseRecord is one finished phase.
type PhaseRecord struct {
	Name     string        `json:"name"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Duration time.Duration `json:"duration"`
	// Waited is the part of Duration spent waiting on something outside
	// the host: the API server, the kubelet, flannel.
	Waited  time.Duration `json:"waited,omitempty"`
	Message string        `json:"message,omitempty"`
}
