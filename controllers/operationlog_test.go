package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

func TestOperationLogLines(t *testing.T) {
	// A vSphere clone is a Create.
	clone := infrav1.MachineOperation{Type: infrav1.MachineOperationCreate, ID: "task-42"}
	powerOn := infrav1.MachineOperation{Type: infrav1.MachineOperationPowerOn, ID: "task-43"}
	// What an Azure operation records: a poller's resume token.
	create := infrav1.MachineOperation{Type: infrav1.MachineOperationCreate, ID: `{"type":"AzureAsyncOperation","pollURL":"https://management.azure.com/subscriptions/x/providers/Microsoft.Compute/locations/westeurope/operations/abc?api-version=2024-07-01&sig=SECRET"}`}
	for _, tc := range []struct {
		name        string
		prior, next infrav1.MachineOperation
		err         error
		want        []string
	}{
		{"nothing recorded, nothing started", infrav1.MachineOperation{}, infrav1.MachineOperation{}, nil, nil},
		{"still running", clone, clone, nil, nil},
		// An Azure resume token holds the operation's state: it changes
		// after the first poll.
		{"still running, its ID changed", create, infrav1.MachineOperation{Type: infrav1.MachineOperationCreate, ID: `{"state":"InProgress"}`}, nil, nil},
		{"a clone started", infrav1.MachineOperation{}, clone, nil, []string{`"msg"="Platform operation started" "operation"="Create"`}},
		{"a clone ended, a power-on started", clone, powerOn, nil, []string{
			`"msg"="Platform operation ended" "operation"="Create"`,
			`"msg"="Platform operation started" "operation"="PowerOn"`,
		}},
		{"a create failed", create, infrav1.MachineOperation{}, platform.NewError(platform.ErrOperationFailed, "AllocationFailed"), []string{
			`"msg"="Platform operation no longer followed" "operation"="Create" "reason"="AllocationFailed"`,
		}},
		{"an operation that can no longer be read", clone, infrav1.MachineOperation{}, platform.NewError(platform.ErrUnavailable, "vCenter does not answer"), []string{
			`"msg"="Platform operation no longer followed" "operation"="Create"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
			logMachineOperation(ctrl.LoggerInto(context.Background(), log), tc.prior, tc.next, tc.err)
			if len(lines) != len(tc.want) {
				t.Fatalf("logged %q, want %d lines like %q", lines, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(lines[i], want) {
					t.Errorf("line %d is %s, want %s", i, lines[i], want)
				}
				if strings.Contains(lines[i], "SECRET") || strings.Contains(lines[i], "task-4") {
					t.Errorf("line %d holds the operation's ID: %s", i, lines[i])
				}
			}
		})
	}

	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	ctx := ctrl.LoggerInto(context.Background(), log)
	lb := infrav1.ClusterOperation{Type: infrav1.ClusterOperationCreate, Resource: "load balancer win1-apiserver", ID: "token"}
	logClusterOperation(ctx, infrav1.ClusterOperation{}, lb, nil)
	logClusterOperation(ctx, lb, infrav1.ClusterOperation{}, errors.New("a poll Azure did not answer"))
	want := []string{
		`"level"=0 "msg"="Platform operation started" "operation"="Create" "resource"="load balancer win1-apiserver"`,
		`"level"=0 "msg"="Platform operation no longer followed" "operation"="Create" "resource"="load balancer win1-apiserver" "reason"="a poll Azure did not answer"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
