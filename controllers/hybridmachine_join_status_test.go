package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

func TestParseProgress(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		data    string
		want    infrav1.NodeBootstrapStatus
		wantErr string
	}{
		{"running", `{"nodeName":"w1","phase":"kubelet","state":"Running","message":"starting","time":"2025-01-02T03:04:05Z","phases":[]}`,
			infrav1.NodeBootstrapStatus{Phase: "kubelet", State: infrav1.NodeBootstrapRunning, Message: "starting", LastUpdateTime: metav1.NewTime(at)}, ""},
		{"failed, retryable", `{"phase":"discovery","state":"Failed","message":"token expired","retryable":true,"time":"2025-01-02T03:04:05Z"}`,
			infrav1.NodeBootstrapStatus{Phase: "discovery", State: infrav1.NodeBootstrapFailed, Message: "token expired", Retryable: ptr.To(true), LastUpdateTime: metav1.NewTime(at)}, ""},
		{"failed, not retryable", `{"phase":"preflight","state":"Failed","time":"2025-01-02T03:04:05Z"}`,
			infrav1.NodeBootstrapStatus{Phase: "preflight", State: infrav1.NodeBootstrapFailed, Retryable: ptr.To(false), LastUpdateTime: metav1.NewTime(at)}, ""},
		{"joined, no time", `{"phase":"complete","state":"Joined"}`, infrav1.NodeBootstrapStatus{Phase: "complete", State: infrav1.NodeBootstrapJoined}, ""},
		{"not JSON", `{"phase":`, infrav1.NodeBootstrapStatus{}, "does not parse"},
		{"unknown state", `{"phase":"kubelet","state":"Sleeping"}`, infrav1.NodeBootstrapStatus{}, `"Sleeping" is none of Running, Failed, Joined`},
		{"no phase", `{"state":"Running"}`, infrav1.NodeBootstrapStatus{}, "names no phase"},
		{"phase not a name", `{"phase":"Kubelet Start","state":"Running"}`, infrav1.NodeBootstrapStatus{}, "names no phase"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProgress(tt.data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Phase != tt.want.Phase || got.State != tt.want.State || got.Message != tt.want.Message ||
				!ptr.Equal(got.Retryable, tt.want.Retryable) || !got.LastUpdateTime.Equal(&tt.want.LastUpdateTime) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseProgressCutsLongMessages(t *testing.T) {
	got, err := parseProgress(`{"phase":"kubelet","state":"Running","message":"` + strings.Repeat("é", 3000) + `"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Message) > maxReportMessage || !strings.HasPrefix(got.Message, "éé") || strings.ContainsRune(got.Message, '\uFFFD') {
		t.Errorf("message of %d bytes, not cut on a character", len(got.Message))
	}
}

func TestNodeJoined(t *testing.T) {
	running := infrav1.NodeBootstrapStatus{Phase: "kubelet", State: infrav1.NodeBootstrapRunning, Message: "starting the kubelet"}
	failed := infrav1.NodeBootstrapStatus{Phase: "node-registration", State: infrav1.NodeBootstrapFailed, Message: "forbidden label", Retryable: ptr.To(false)}
	retried := infrav1.NodeBootstrapStatus{Phase: "discovery", State: infrav1.NodeBootstrapFailed, Message: "token expired", Retryable: ptr.To(true)}
	tests := []struct {
		name       string
		nodeRef    bool
		report     infrav1.NodeBootstrapStatus
		unreadable string
		status     metav1.ConditionStatus
		reason     string
		message    string
	}{
		{"no report yet", false, infrav1.NodeBootstrapStatus{}, "", metav1.ConditionUnknown, infrav1.HybridMachineNodeJoinedWaitingForReportReason, `C:\ProgramData\capwin\bootstrap.log`},
		{"running", false, running, "", metav1.ConditionUnknown, infrav1.HybridMachineNodeJoinedJoiningReason, "Phase kubelet runs: starting the kubelet"},
		{"failed for good", false, failed, "", metav1.ConditionFalse, "NodeRegistrationFailed", "Phase node-registration failed (will not pass by itself: fix the cause, then run capwin-node join on the node or delete the Machine): forbidden label"},
		{"failed, retried", false, retried, "", metav1.ConditionFalse, "DiscoveryFailed", "(may pass: the bootstrap stub reboots the VM to run the join again, up to its attempt limit): token expired"},
		{"joined by report", false, infrav1.NodeBootstrapStatus{Phase: "complete", State: infrav1.NodeBootstrapJoined}, "", metav1.ConditionTrue, infrav1.HybridMachineNodeJoinedReason, ""},
		{"nodeRef without report", true, infrav1.NodeBootstrapStatus{}, "", metav1.ConditionTrue, infrav1.HybridMachineNodeJoinedReason, ""},
		{"nodeRef after a failure", true, failed, "", metav1.ConditionTrue, infrav1.HybridMachineNodeJoinedReason, ""},
		{"unreadable", false, running, "the report does not parse", metav1.ConditionUnknown, infrav1.HybridMachineNodeJoinedInvalidReportReason, "the report does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := nodeJoined(tt.nodeRef, tt.report, tt.unreadable)
			if c.Status != tt.status || c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) {
				t.Errorf("got %s %s %q, want %s %s containing %q", c.Status, c.Reason, c.Message, tt.status, tt.reason, tt.message)
			}
		})
	}
}

func TestFailedReason(t *testing.T) {
	for phase, want := range map[string]string{
		"preflight":          "PreflightFailed",
		"discovery":          "DiscoveryFailed",
		"node-registration":  "NodeRegistrationFailed",
		"pre-join-commands":  "PreJoinCommandsFailed",
		"cni":                "CNIFailed",
		"hns-network":        "HNSNetworkFailed",
		"1-x":                "Phase1XFailed",
		"kube-proxy":         "KubeProxyFailed",
		"post-join-commands": "PostJoinCommandsFailed",
	} {
		if got := failedReason(phase); got != want {
			t.Errorf("failedReason(%q) = %q, want %q", phase, got, want)
		}
	}
}

// TestReady: a failed join makes Ready False with the node's words; one
// that runs leaves Ready as VMProvisioned has it; a Linux machine has no
// NodeJoined.
func TestReady(t *testing.T) {
	provisioned := metav1.Condition{Type: infrav1.HybridMachineVMProvisionedCondition, Status: metav1.ConditionTrue, Reason: infrav1.HybridMachineVMProvisionedReason}
	starting := metav1.Condition{Type: infrav1.HybridMachineVMProvisionedCondition, Status: metav1.ConditionFalse, Reason: infrav1.HybridMachineStartingReason, Message: "operation PowerOn (task-1)"}
	joined := func(c metav1.Condition) metav1.Condition { c.Type = infrav1.HybridMachineNodeJoinedCondition; return c }
	tests := []struct {
		name    string
		conds   []metav1.Condition
		status  metav1.ConditionStatus
		message string
	}{
		{"linux, provisioned", []metav1.Condition{provisioned}, metav1.ConditionTrue, ""},
		{"waiting for the first report", []metav1.Condition{provisioned, joined(nodeJoined(false, infrav1.NodeBootstrapStatus{}, ""))}, metav1.ConditionTrue, ""},
		{"joining", []metav1.Condition{provisioned, joined(nodeJoined(false, infrav1.NodeBootstrapStatus{Phase: "kubelet", State: infrav1.NodeBootstrapRunning}, ""))}, metav1.ConditionTrue, "Phase kubelet runs"},
		{"failed", []metav1.Condition{provisioned, joined(nodeJoined(false, infrav1.NodeBootstrapStatus{Phase: "discovery", State: infrav1.NodeBootstrapFailed, Message: "wrong CA hash"}, ""))}, metav1.ConditionFalse, "wrong CA hash"},
		{"VM starting", []metav1.Condition{starting, joined(nodeJoined(false, infrav1.NodeBootstrapStatus{}, ""))}, metav1.ConditionFalse, "operation PowerOn"},
		{"joined", []metav1.Condition{provisioned, joined(nodeJoined(true, infrav1.NodeBootstrapStatus{}, ""))}, metav1.ConditionTrue, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hm := &infrav1.HybridMachine{}
			for _, c := range tt.conds {
				conditions.Set(hm, c)
			}
			setReady(hm)
			c := conditions.Get(hm, infrav1.HybridMachineReadyCondition)
			if c == nil || c.Status != tt.status || !strings.Contains(c.Message, tt.message) {
				t.Errorf("got %+v, want %s containing %q", c, tt.status, tt.message)
			}
		})
	}
}
