package platform

import (
	"context"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// Factory returns the Platform of a HybridCluster: the implementation its
// spec names, logged in with the credentials its identityRef names.
type Factory interface {
	// For returns ErrNotSupported when this build has no implementation of
	// the platform, and the credential and login errors (ErrCredentialsNotFound,
	// ErrIdentityNotAllowed, ErrAuthentication, ErrUnavailable) otherwise.
	For(ctx context.Context, hc *infrav1.HybridCluster) (Platform, error)
	// Supports reports whether this build implements the platform of that
	// PlatformLabel value; a machine on another was never made.
	Supports(platform string) bool
	// MakesClusterResources reports whether the HybridCluster's platform
	// makes resources of the cluster's own (EnsureCluster's), which
	// deleting it must remove: a platform that makes none lets a deleted
	// cluster go without logging in, even when its credentials are gone.
	MakesClusterResources(hc *infrav1.HybridCluster) bool
}

// Platform is one HybridCluster's cloud, as the reconcilers use it. No call
// waits for a long operation: one that is started is returned for the
// caller to record in status.operation and pass back on a later reconcile.
type Platform interface {
	// EnsureCluster drives the cluster's shared infrastructure one step
	// towards ready and reports it: on vSphere, it checks that the
	// datacenter exists; on Azure, it makes the resource group, the
	// network and the API server's load balancer, one operation at a time.
	EnsureCluster(ctx context.Context) (ClusterState, error)
	// DeleteCluster drives what EnsureCluster made one step towards gone,
	// once no machine is left, and reports gone once nothing is.
	DeleteCluster(ctx context.Context) (gone bool, op infrav1.ClusterOperation, err error)
	// EnsureMachine drives the machine's VM one step towards existing and
	// running, and reports its state.
	EnsureMachine(ctx context.Context, m *Machine) (MachineState, error)
	// WriteBootstrapData starts replacing the VM's bootstrap data with
	// m.BootstrapData, for a VM whose node has not joined and that runs
	// with other data (EnsureMachine's BootstrapDataStale); a write
	// recorded in status.operation that still runs is returned.
	WriteBootstrapData(ctx context.Context, m *Machine) (infrav1.MachineOperation, error)
	// BootstrapDataCleared reports whether the VM no longer carries the
	// bootstrap data (a VM that is gone carries none).
	BootstrapDataCleared(ctx context.Context, m *Machine) (bool, error)
	// ClearBootstrapData starts removing the bootstrap data from the VM;
	// BootstrapDataCleared tells when it is done.
	ClearBootstrapData(ctx context.Context, m *Machine) (infrav1.MachineOperation, error)
	// DeleteMachine drives the VM one step towards gone, and reports gone
	// once nothing of it is left.
	DeleteMachine(ctx context.Context, m *Machine) (gone bool, op infrav1.MachineOperation, err error)
}

// Machine is one HybridMachine as a Platform sees it.
type Machine struct {
	// HybridMachine is read, never written, by the platform: its spec, its
	// recorded status.operation, whether it was provisioned and when its
	// deletion began.
	HybridMachine *infrav1.HybridMachine
	// ComputerName is the guest's host name, which becomes its node name.
	ComputerName string
	// BootstrapData is the Machine's bootstrap data: always until the VM
	// exists; after, only while the node has not joined and the data may
	// differ from the VM's, for EnsureMachine to compare.
	BootstrapData []byte
	// FailureDomain is the Machine's failure domain (an Azure availability
	// zone); empty for none.
	FailureDomain string
}

// BootstrapDataKeeper is a Platform whose VMs keep their bootstrap data
// where capwin cannot remove it (Azure's customData): BootstrapDataCleared
// is always true, and KeptBootstrapData says where the data stays, for the
// BootstrapDataCleared condition.
type BootstrapDataKeeper interface {
	KeptBootstrapData() string
}

// ClusterState is what EnsureCluster found or started.
type ClusterState struct {
	// Operation is an operation still running: record it and come back.
	Operation infrav1.ClusterOperation
	// Waiting names what the cluster's infrastructure still waits for (a
	// resource being made); empty once machines can be made.
	Waiting string
	// ControlPlaneEndpoint is the endpoint the platform made for the
	// control plane (Azure's API server load balancer), for
	// spec.controlPlaneEndpoint; empty when it made none.
	ControlPlaneEndpoint clusterv1.APIEndpoint
	// FailureDomains are where machines can be placed, for
	// status.failureDomains; empty when the platform offers none.
	FailureDomains []clusterv1.FailureDomain
}

// Ready reports whether machines can be made.
func (s ClusterState) Ready() bool { return s.Operation.IsZero() && s.Waiting == "" }

// MachineState is what EnsureMachine found or started.
type MachineState struct {
	// Operation is an operation still running: record it and come back.
	Operation infrav1.MachineOperation
	// OperationEnded says that the recorded operation has ended, so that
	// it is cleared even when EnsureMachine returns an error: the next
	// reconcile then looks at the VM rather than follow the operation
	// again.
	OperationEnded bool
	// Exists is true once the VM exists.
	Exists bool
	// Running is true once the VM runs.
	Running bool
	// ProviderID is the provider ID its Node gets, once the VM exists.
	ProviderID string
	// Addresses are the guest's IP addresses on the machine's own network
	// devices, once the guest reports them.
	Addresses []string
	// NetworkNotApplied says how the guest's addresses differ from the
	// static ones the spec asks for; empty when they do not.
	NetworkNotApplied string
	// BootstrapDataStale is true when the VM runs with bootstrap data other
	// than BootstrapData; only looked at when BootstrapData is given.
	BootstrapDataStale bool
}

// DefaultRetry is how soon an unreachable or misconfigured platform is
// tried again when the error says nothing else: often enough to notice a
// fix, seldom enough never to storm the platform.
const DefaultRetry = 30 * time.Second
