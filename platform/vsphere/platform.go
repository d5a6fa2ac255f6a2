package vsphere

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// Platform is a vSphere HybridCluster's vCenter, through the shared session
// of its credentials.
type Platform struct {
	sessions *Sessions
	session  *Session
	cluster  *infrav1.HybridCluster
}

var _ platform.Platform = &Platform{}

// CredentialsFrom reads a vCenter login from the identity's Secret (keys
// username and password) and the cluster's spec.vsphere.
func CredentialsFrom(s *corev1.Secret, spec *infrav1.VSphereClusterSpec) (Credentials, error) {
	v, err := platform.SecretValues(s, "username", "password")
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{
		Server:     spec.Server,
		Username:   v[0],
		Password:   v[1],
		Thumbprint: spec.Thumbprint,
		Insecure:   ptr.Deref(spec.Insecure, false),
	}, nil
}

// New returns the platform of a vSphere HybridCluster, logging in with
// creds unless sessions already holds their session.
func New(ctx context.Context, sessions *Sessions, creds Credentials, hc *infrav1.HybridCluster) (*Platform, error) {
	if hc.Spec.VSphere == nil {
		return nil, fmt.Errorf("%w: HybridCluster %s has no spec.vsphere", platform.ErrInvalid, hc.Name)
	}
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		return nil, err
	}
	return &Platform{sessions: sessions, session: s, cluster: hc}, nil
}

// EnsureCluster returns ErrNotFound, naming the datacenter and the
// vCenter, when the cluster's datacenter does not exist. capwin makes
// nothing for a vSphere cluster: spec.controlPlaneEndpoint is the user's.
func (p *Platform) EnsureCluster(ctx context.Context) (platform.ClusterState, error) {
	v := p.cluster.Spec.VSphere
	err := p.session.CheckDatacenter(ctx, v.Datacenter)
	if errors.Is(err, ErrNotFound) {
		return platform.ClusterState{}, platform.NewError(platform.ErrNotFound, fmt.Sprintf("Datacenter %s does not exist on %s", v.Datacenter, v.Server))
	}
	return platform.ClusterState{}, p.neutral(err)
}

// DeleteCluster has nothing to delete: capwin made nothing for the cluster.
func (p *Platform) DeleteCluster(context.Context) (bool, infrav1.ClusterOperation, error) {
	return true, infrav1.ClusterOperation{}, nil
}

// EnsureMachine clones, configures and powers on the machine's VM, one step
// per call, and reports its state.
func (p *Platform) EnsureMachine(ctx context.Context, m *platform.Machine) (platform.MachineState, error) {
	vm, err := p.machine(m)
	if err != nil {
		return platform.MachineState{}, err
	}
	st, err := p.session.Reconcile(ctx, vm)
	if err != nil {
		return platform.MachineState{Operation: st.Op}, p.neutral(err)
	}
	return platform.MachineState{
		Operation:          st.Op,
		Exists:             st.Exists,
		Running:            st.PoweredOn,
		ProviderID:         st.ProviderID(),
		Addresses:          st.Addresses,
		NetworkNotApplied:  st.NetworkNotApplied,
		BootstrapDataStale: st.UserDataStale,
	}, nil
}

// BootstrapDataCleared reports whether guestinfo.userdata is empty.
func (p *Platform) BootstrapDataCleared(ctx context.Context, m *platform.Machine) (bool, error) {
	vm, err := p.machine(m)
	if err != nil {
		return false, err
	}
	cleared, err := p.session.UserDataCleared(ctx, vm)
	return cleared, p.neutral(err)
}

// WriteBootstrapData replaces guestinfo.userdata with a reconfigure task.
func (p *Platform) WriteBootstrapData(ctx context.Context, m *platform.Machine) (infrav1.MachineOperation, error) {
	vm, err := p.machine(m)
	if err != nil {
		return infrav1.MachineOperation{}, err
	}
	op, err := p.session.WriteUserData(ctx, vm)
	return op, p.neutral(err)
}

// ClearBootstrapData empties guestinfo.userdata with a reconfigure task.
func (p *Platform) ClearBootstrapData(ctx context.Context, m *platform.Machine) (infrav1.MachineOperation, error) {
	vm, err := p.machine(m)
	if err != nil {
		return infrav1.MachineOperation{}, err
	}
	op, err := p.session.ClearUserData(ctx, vm)
	return op, p.neutral(err)
}

// DeleteMachine powers the VM off and destroys it, one task per call.
func (p *Platform) DeleteMachine(ctx context.Context, m *platform.Machine) (bool, infrav1.MachineOperation, error) {
	vm, err := p.machine(m)
	if err != nil {
		return false, infrav1.MachineOperation{}, err
	}
	gone, op, err := p.session.Delete(ctx, vm)
	return gone, op, p.neutral(err)
}

// machine is what the vSphere service needs of m.
func (p *Platform) machine(m *platform.Machine) (Machine, error) {
	hm := m.HybridMachine
	if hm.Spec.VSphere == nil {
		return Machine{}, fmt.Errorf("%w: spec.vsphere must be set: a HybridMachine is on its HybridCluster's platform, vSphere", platform.ErrInvalid)
	}
	vm := Machine{
		Namespace:        hm.Namespace,
		Name:             hm.Name,
		Datacenter:       p.cluster.Spec.VSphere.Datacenter,
		Spec:             hm.Spec.VSphere,
		OS:               hm.Spec.OS.Type,
		ComputerName:     m.ComputerName,
		ControlPlaneHost: p.cluster.Spec.ControlPlaneEndpoint.Host,
		UserData:         m.BootstrapData,
		Op:               hm.Status.Operation,
		Provisioned:      ptr.Deref(hm.Status.Initialization.Provisioned, false),
	}
	vm.SSHAuthorizedKeys = hm.Spec.SSHAuthorizedKeys
	if hm.DeletionTimestamp != nil {
		vm.DeletingSince = hm.DeletionTimestamp.Time
	}
	return vm, nil
}

// sessionRetry is how soon a call whose session vCenter ended is tried
// again, with a new login.
const sessionRetry = time.Second

// neutral turns an error that says the session is no longer logged in into
// ErrSessionExpired (and forgets the session, so the next try logs in).
func (p *Platform) neutral(err error) error {
	if err != nil && p.sessions.Stale(err, p.session) {
		return platform.WithRetryAfter(fmt.Errorf("%w: %w", platform.ErrSessionExpired, err), sessionRetry)
	}
	if unreachable(err) {
		return fmt.Errorf("%w: %w", ErrConnect, err)
	}
	return err
}
