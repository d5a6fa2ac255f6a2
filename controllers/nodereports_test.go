package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// fakeReports is a NodeReports that holds one report, or fails.
type fakeReports struct {
	data  string
	found bool
	err   error
	// asked are the cluster and machine it was asked for.
	asked []string
}

func (f *fakeReports) Latest(_ context.Context, cluster client.ObjectKey, machine string) (string, bool, error) {
	f.asked = append(f.asked, cluster.String()+" "+machine)
	return f.data, f.found, f.err
}

// TestNodeReportsFeedTheStatus: the reconciler reads a joining node's
// report from its NodeReports source, for the machine's Cluster and
// Machine; no report keeps the last status, a source that fails keeps it
// too and is asked again after ProgressPoll.
func TestNodeReportsFeedTheStatus(t *testing.T) {
	scope := func() *machineScope {
		return &machineScope{
			hm:      &infrav1.HybridMachine{Spec: infrav1.HybridMachineSpec{OS: infrav1.OSSpec{Type: infrav1.OSWindows}}},
			machine: &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "win1-md-0-x"}},
			cluster: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "win1"}},
		}
	}
	src := &fakeReports{data: `{"phase":"kubelet","state":"Running","message":"starting the kubelet"}`, found: true}
	r := &HybridMachineReconciler{NodeReports: src, ProgressPoll: time.Minute}
	s := scope()
	res, next, err := r.readNodeProgress(t.Context(), s)
	if err != nil || !next {
		t.Fatalf("readNodeProgress = %v, %v", next, err)
	}
	if got := s.hm.Status.NodeBootstrap; got.Phase != "kubelet" || got.State != infrav1.NodeBootstrapRunning || got.Message != "starting the kubelet" {
		t.Errorf("status.nodeBootstrap = %+v", got)
	}
	if len(src.asked) != 1 || src.asked[0] != "ns/win1 win1-md-0-x" {
		t.Errorf("the source was asked for %q, want the machine's Cluster and Machine", src.asked)
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("without a watch the reconcile looks again after %v, want ProgressPoll", res.RequeueAfter)
	}

	for _, src := range []*fakeReports{{}, {err: errors.New("the source failed")}} {
		r.NodeReports = src
		before := s.hm.Status.NodeBootstrap
		res, _, err := r.readNodeProgress(t.Context(), s)
		if err != nil {
			t.Errorf("%v: the reconcile failed: %v", src.err, err)
		}
		if s.hm.Status.NodeBootstrap != before {
			t.Errorf("%v: the last report was replaced by %+v", src.err, s.hm.Status.NodeBootstrap)
		}
		if res.RequeueAfter != time.Minute {
			t.Errorf("%v: the reconcile looks again after %v, want ProgressPoll", src.err, res.RequeueAfter)
		}
	}
}
