package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/node-components/host"
	nodesim "github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/kubeadm"
)

// Failure is how a guest misbehaves, for tests of remediation.
type Failure int

const (
	// Healthy guests register a Ready Node after the boot delay.
	Healthy Failure = iota
	// NeverReady guests register their Node, which never becomes Ready.
	NeverReady
	// ReadyThenNotReady guests become Ready, then NotReady a second later.
	ReadyThenNotReady
)

// Guests plays the operating system of every VM capwin creates. When a VM
// is powered on it reads guestinfo.metadata as cloudbase-init or
// cloud-init would, brings its network up and reports its host name and
// address to vCenter as VMware Tools does.
//
// A Windows guest is a machine of node-components' in-memory Windows host
// with the bundle installed. After the boot delay cloudbase-init runs the
// bootstrap stub from the guestinfo.userdata it reads at that boot: the
// stub's decoding (payload.ParseScript), then capwin-node's real join, in
// process, against the workload API server, whose kubelet service is a
// simulated kubelet (TLS bootstrap with the bootstrap token, its Node
// registered and kept with its own credentials). cloudbase-init's rules
// decide what follows a failed join (cloudbaseinit.go).
//
// A Linux guest reads the kubeadm configuration its cloud-config writes;
// after the boot delay its kubelet registers the Node with the credentials
// kubeadm writes for it (see kubelet and linuxKubeletClient).
//
// A guest whose data a real one would refuse, or whose join fails for
// good, says why in Rejected.
type Guests struct {
	cloud     vmSource
	vc        *vspheresim.VCenter // on vSphere, where VMware Tools reports
	workload  client.Client
	bootDelay time.Duration
	log       logr.Logger
	// apiServer is the workload API server's host:port, where the
	// simulated network routes every control-plane endpoint.
	apiServer string
	// addUser issues a client certificate of the workload cluster's CA.
	addUser func(name string, groups ...string) (*rest.Config, error)
	// dir holds the Windows guests' disks and bundleDir the bundle their
	// image was made with.
	dir, bundleDir string

	mu       sync.Mutex
	guests   map[string]*guest // by VM managed object ID
	failure  func(nodeName string) Failure
	fault    func(nodeName string) Fault
	rejected map[string]string // VM name: why
	nodeVMs  map[string]string // node name: the ID of the VM that booted as it
	joined   []string
	leases   int // DHCP addresses handed out
	subnets  int // pod subnets handed out

	bootstrap bootstraps // the Windows guests' runs of the bootstrap stub (cloudbaseinit.go)

	// procs are the guests' processes (stub runs, kubelets) and the
	// removal of destroyed guests' disks, waited for before the guests'
	// directory goes.
	procs sync.WaitGroup
}

type guest struct {
	vmID, vmName string
	// nodeName is the name the node takes: its host name in lower case.
	nodeName  string
	ip        string
	poweredOn time.Time
	kubelet   *kubelet // a Linux guest's
	failure   Failure
	fault     Fault
	state     guestState
	readyAt   time.Time
	// kubeletVersion is the version of the kubelet the image carries.
	kubeletVersion string
	// ctx ends when the VM is destroyed, and the guest's processes (procs)
	// with it.
	ctx    context.Context
	cancel context.CancelFunc
	procs  *sync.WaitGroup
	win    *windowsGuest
	// runs counts the stub's runs (its attempts); done carries the running
	// one's outcome.
	runs int
	done chan error
	// extra is the VM's extraConfig as last seen: cloudbase-init reads
	// guestinfo again at every boot.
	extra map[string]string
	// customData is an Azure VM's, which never changes.
	customData []byte
}

// userData is the user data the guest's software reads at this boot:
// guestinfo.userdata as last seen on vSphere, the customData on Azure.
func (gs *guest) userData() ([]byte, error) {
	if gs.customData != nil {
		return gs.customData, nil
	}
	return decodeGuestinfo(gs.extra, "guestinfo.userdata")
}

// vmSource is the cloud whose VMs the guests play: vCenter or Azure.
type vmSource interface {
	// VMs lists the cloud's VMs.
	VMs(ctx context.Context) ([]cloudVM, error)
	Close()
}

// cloudVM is a VM as the guests see it; one of vsphere and azure is set.
type cloudVM struct {
	ID, Name  string
	PoweredOn bool
	vsphere   *vspheresim.VM
	azure     *azureVM
}

// firstBoot is what a guest's software finds at its first boot.
type firstBoot struct {
	// hostName is the computer name it takes.
	hostName string
	// ip is its network device's address.
	ip string
	// build is a Windows guest's Windows build, empty for Linux.
	build string
	// hardware is what the VM's firmware tells a Windows guest.
	hardware host.Hardware
}

type guestState int

const (
	booting guestState = iota
	joining
	registered
	ignored
	rejected
)

// pollInterval is how often, at most, the guests look at vCenter.
const pollInterval = 100 * time.Millisecond

// newGuests are the guests of the cloud's VMs; it closes cloud on error.
func newGuests(cloud vmSource, workload *kubeadm.Cluster, bootDelay time.Duration, log logr.Logger) (*Guests, error) {
	dir, err := os.MkdirTemp("", "capwin-sim-guests-")
	if err != nil {
		cloud.Close()
		return nil, err
	}
	bundleDir := filepath.Join(dir, "bundle")
	if err := nodesim.WriteStandInBundle(bundleDir, KubernetesVersion); err != nil {
		cloud.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("the Windows image's bundle: %w", err)
	}
	return &Guests{
		cloud: cloud, workload: workload.Env.Client, bootDelay: bootDelay, log: log,
		apiServer: workload.Endpoint, addUser: workload.Env.AddUser, dir: dir, bundleDir: bundleDir,
		guests: map[string]*guest{}, rejected: map[string]string{}, nodeVMs: map[string]string{},
		failure: func(string) Failure { return Healthy },
		fault:   func(string) Fault { return NoFault },
	}, nil
}

// SetFailure decides, by node name, how guests that boot from now on behave;
// nil makes them all healthy.
func (g *Guests) SetFailure(f func(nodeName string) Failure) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f == nil {
		f = func(string) Failure { return Healthy }
	}
	g.failure = f
}

// SetBootDelay sets the boot delay of guests that boot from now on.
func (g *Guests) SetBootDelay(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bootDelay = d
}

// Rejected returns the VMs whose user data a node would have refused, or
// whose join failed for good, with the reason.
func (g *Guests) Rejected() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]string, len(g.rejected))
	for k, v := range g.rejected {
		out[k] = v
	}
	return out
}

// vmOfNode is the ID of the VM whose guest booted with the node's name.
func (g *Guests) vmOfNode(name string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, ok := g.nodeVMs[name]
	return id, ok
}

// Joined returns the names of the nodes whose join succeeded (Windows) or
// whose kubelet registered (Linux), in order.
func (g *Guests) Joined() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.joined)
}
