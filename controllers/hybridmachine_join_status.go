package controllers

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/node-components/report"
)

// The NodeJoined condition and status.nodeBootstrap as pure functions of
// what a reconcile read from the workload cluster.

// maxReportMessage is status.nodeBootstrap.message's length limit.
const maxReportMessage = 4096

// waitingForReportMessage says where a join that never reported failed.
const waitingForReportMessage = "Waiting for the node's first report: a node reports only to a control plane discovery proved; " +
	`a bad token, an unsigned cluster-info or an unreadable configuration shows only on the node (capwin-node status, C:\ProgramData\capwin\bootstrap.log)`

// phaseName is the form of an agent's phase names (node-registration).
var phaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func setNodeJoined(hm *infrav1.HybridMachine, c metav1.Condition) {
	c.Type = infrav1.HybridMachineNodeJoinedCondition
	conditions.Set(hm, c)
}

// parseProgress reads the agent's report (the JSON of report.Progress) as
// status.nodeBootstrap; an error says why it cannot be used.
func parseProgress(data string) (infrav1.NodeBootstrapStatus, error) {
	var p report.Progress
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return infrav1.NodeBootstrapStatus{}, fmt.Errorf("the report does not parse: %w", err)
	}
	if len(p.Phase) > 63 || !phaseName.MatchString(p.Phase) {
		return infrav1.NodeBootstrapStatus{}, errors.New("the report names no phase, or one that is not a lowercase name of at most 63 characters")
	}
	st := infrav1.NodeBootstrapStatus{Phase: p.Phase, State: infrav1.NodeBootstrapState(p.State), Message: truncate(p.Message, maxReportMessage)}
	switch st.State {
	case infrav1.NodeBootstrapFailed:
		st.Retryable = ptr.To(p.Retryable)
	case infrav1.NodeBootstrapRunning, infrav1.NodeBootstrapJoined:
	default:
		return infrav1.NodeBootstrapStatus{}, fmt.Errorf("the report's state %.32q is none of Running, Failed, Joined", p.State)
	}
	if !p.Time.IsZero() {
		st.LastUpdateTime = metav1.NewTime(p.Time)
	}
	return st, nil
}

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// nodeJoined is the NodeJoined condition of a Windows machine: joined
// once the Machine has a nodeRef or the node reported Joined; otherwise
// from the node's last report (zero: none yet) and, when the report in
// the workload cluster cannot be read, why.
func nodeJoined(nodeRef bool, report infrav1.NodeBootstrapStatus, unreadable string) metav1.Condition {
	unknown := func(reason, message string) metav1.Condition {
		return metav1.Condition{Status: metav1.ConditionUnknown, Reason: reason, Message: message}
	}
	switch {
	case nodeRef || report.State == infrav1.NodeBootstrapJoined:
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridMachineNodeJoinedReason}
	case unreadable != "":
		return unknown(infrav1.HybridMachineNodeJoinedInvalidReportReason, "The node's progress report cannot be used: "+unreadable)
	case report.State == infrav1.NodeBootstrapFailed:
		retry := "may pass: the bootstrap stub reboots the VM to run the join again, up to its attempt limit"
		if !ptr.Deref(report.Retryable, false) {
			retry = "will not pass by itself: fix the cause, then run capwin-node join on the node or delete the Machine"
		}
		return notYet(failedReason(report.Phase), fmt.Sprintf("Phase %s failed (%s): %s", report.Phase, retry, report.Message))
	case report.State == infrav1.NodeBootstrapRunning:
		msg := "Phase " + report.Phase + " runs"
		if report.Message != "" {
			msg += ": " + report.Message
		}
		return unknown(infrav1.HybridMachineNodeJoinedJoiningReason, msg)
	}
	return unknown(infrav1.HybridMachineNodeJoinedWaitingForReportReason, waitingForReportMessage)
}

// phaseAcronyms are the phase name parts written in capitals in a reason.
var phaseAcronyms = map[string]string{"cni": "CNI", "hns": "HNS"}

// failedReason is the reason of a failed phase: node-registration gives
// NodeRegistrationFailed.
func failedReason(phase string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(phase, "-") {
		if a, ok := phaseAcronyms[part]; ok {
			b.WriteString(a)
		} else if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	if b.Len() == 0 || b.String()[0] < 'A' || b.String()[0] > 'Z' {
		// A reason begins with a letter; a phase named 1-x gives Phase1X.
		return "Phase" + b.String() + infrav1.HybridMachineNodeJoinedFailedReasonSuffix
	}
	return b.String() + infrav1.HybridMachineNodeJoinedFailedReasonSuffix
}

// setReady sums up VMProvisioned and, on Windows machines, NodeJoined in
// Ready; a join that runs counts as information (see readyPriority).
func setReady(hm *infrav1.HybridMachine) {
	_ = conditions.SetSummaryCondition(hm, hm, infrav1.HybridMachineReadyCondition,
		conditions.ForConditionTypes{infrav1.HybridMachineVMProvisionedCondition, infrav1.HybridMachineNodeJoinedCondition},
		conditions.IgnoreTypesIfMissing{infrav1.HybridMachineNodeJoinedCondition},
		conditions.CustomMergeStrategy{MergeStrategy: conditions.DefaultMergeStrategy(conditions.GetPriorityFunc(readyPriority))})
}

// readyPriority ranks the machine's conditions for its Ready summary. A
// join that runs (NodeJoined Unknown) counts as information, not as a
// problem: the VM is what this object provides, and Cluster API's Machine
// already reports the missing Node in its own NodeHealthy condition, so
// an Unknown here would only mark the Machine's InfrastructureReady
// Unknown for a machine whose infrastructure is ready. A join that
// failed is a problem and makes Ready False, with the node's words.
func readyPriority(c metav1.Condition) conditions.MergePriority {
	if c.Type == infrav1.HybridMachineNodeJoinedCondition && c.Status == metav1.ConditionUnknown {
		return conditions.InfoMergePriority
	}
	return conditions.GetDefaultMergePriorityFunc()(c)
}
