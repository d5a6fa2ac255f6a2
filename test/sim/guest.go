package sim

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	nodesim "github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/kubeadm"

	"github.com/capwin/capwin/internal/userdata"
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
}

// vcenterVMs is vCenter's VMs.
type vcenterVMs struct {
	w *vspheresim.Watcher
}

func (v vcenterVMs) VMs(ctx context.Context) ([]cloudVM, error) {
	vms, err := v.w.VMs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]cloudVM, len(vms))
	for i := range vms {
		out[i] = cloudVM{ID: vms[i].ID, Name: vms[i].Name, PoweredOn: vms[i].PoweredOn, vsphere: &vms[i]}
	}
	return out, nil
}

func (v vcenterVMs) Close() { v.w.Close(context.Background()) }

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

// newVCenterGuests are the guests of vCenter's VMs.
func newVCenterGuests(ctx context.Context, vc *vspheresim.VCenter, workload *kubeadm.Cluster, bootDelay time.Duration, log logr.Logger) (*Guests, error) {
	w, err := vc.Watch(ctx)
	if err != nil {
		return nil, fmt.Errorf("the guests watching vCenter's VMs: %w", err)
	}
	g, err := newGuests(vcenterVMs{w}, workload, bootDelay, log)
	if err != nil {
		return nil, err
	}
	g.vc = vc
	return g, nil
}

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

func (g *Guests) run(ctx context.Context) {
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	for {
		start := time.Now()
		if err := g.step(ctx); err != nil && ctx.Err() == nil {
			g.log.Error(err, "Guest step failed")
		}
		// At least pollInterval apart, and idle four times as long as a
		// step took: the guests of hundreds of VMs would otherwise take
		// most of a core from the controllers they are there to exercise.
		t.Reset(max(pollInterval, 4*time.Since(start)))
		select {
		case <-ctx.Done():
			g.cloud.Close()
			g.mu.Lock()
			guests := slices.Collect(maps.Values(g.guests))
			g.mu.Unlock()
			for _, gs := range guests {
				gs.cancel()
			}
			for _, gs := range guests {
				gs.procs.Wait()
			}
			g.procs.Wait()
			_ = os.RemoveAll(g.dir)
			return
		case <-t.C:
		}
	}
}

// step looks at every VM once and moves each guest on.
func (g *Guests) step(ctx context.Context) error {
	vms, err := g.cloud.VMs(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	seen := map[string]bool{}
	var errs []error
	for i := range vms {
		vm := &vms[i]
		id := vm.ID
		seen[id] = true
		g.mu.Lock()
		gs := g.guests[id]
		g.mu.Unlock()
		if gs == nil {
			if !vm.PoweredOn {
				continue
			}
			gs = g.boot(ctx, vm, now)
			g.mu.Lock()
			g.guests[id] = gs
			g.mu.Unlock()
		}
		if vm.vsphere != nil {
			gs.extra = vm.vsphere.ExtraConfig
		}
		if err := g.advance(ctx, gs, now); err != nil {
			errs = append(errs, err) // the next step tries again
		}
	}
	g.mu.Lock()
	var gone []*guest
	for id, gs := range g.guests {
		if !seen[id] {
			gone = append(gone, gs)
			delete(g.guests, id) // the VM was destroyed: its OS with it
			if g.nodeVMs[gs.nodeName] == id {
				delete(g.nodeVMs, gs.nodeName)
			}
		}
	}
	g.mu.Unlock()
	for _, gs := range gone {
		gs.cancel()
		if gs.win != nil {
			g.procs.Go(func() {
				gs.procs.Wait() // the agent may write its status as it stops
				_ = os.RemoveAll(gs.win.host.Root())
			})
		}
		if gs.state == registered {
			// Its kubelet is gone: the node lifecycle controller of
			// kube-controller-manager marks the Node, if Cluster API has
			// not deleted it yet, not Ready.
			errs = append(errs, g.kubeletStopped(ctx, gs.nodeName))
		}
	}
	return errors.Join(errs...)
}

// boot is a guest's first look at its VM: it reads its host name and
// brings its network up as its cloud's guest software does (bootVSphere,
// bootAzure); a Linux guest reads its user data, a Windows guest's machine
// comes up with its bundle installed.
func (g *Guests) boot(ctx context.Context, vm *cloudVM, now time.Time) *guest {
	gs := &guest{vmID: vm.ID, vmName: vm.Name, poweredOn: now, kubeletVersion: KubernetesVersion}
	gs.ctx, gs.cancel = context.WithCancel(context.WithoutCancel(ctx))
	gs.procs = &sync.WaitGroup{}
	var fb *firstBoot
	var err error
	if vm.vsphere != nil {
		fb, err = g.bootVSphere(vm.vsphere)
	} else {
		fb, err = g.bootAzure(gs, vm.azure)
	}
	switch {
	case err != nil:
		g.reject(gs, err)
		return gs
	case fb == nil:
		gs.state = ignored // not a machine of capwin's: the inventory's own VMs
		return gs
	}
	gs.ip = fb.ip
	gs.nodeName = strings.ToLower(fb.hostName)
	if fb.build != "" {
		if err := g.bootWindows(gs, fb.build, fb.hostName, gs.ip); err != nil {
			g.reject(gs, err)
			return gs
		}
	} else {
		if vm.vsphere != nil {
			gs.extra = vm.vsphere.ExtraConfig
		}
		userData, err := gs.userData()
		if err == nil {
			gs.kubelet, err = linuxKubelet(linuxNode(fb.hostName), userData, fb.hostName, gs.ip)
		}
		if err != nil {
			g.reject(gs, err)
			return gs
		}
		gs.nodeName = gs.kubelet.node.Name
	}
	g.mu.Lock()
	g.nodeVMs[gs.nodeName] = gs.vmID
	gs.failure = g.failure(gs.nodeName)
	if gs.win != nil {
		gs.fault = g.fault(gs.nodeName)
	}
	gs.readyAt = now.Add(g.bootDelay)
	g.mu.Unlock()
	return gs
}

// bootVSphere reads guestinfo.metadata as cloudbase-init or cloud-init
// does, brings the network up and reports the host name and address to
// vCenter as VMware Tools does; nil for a VM without capwin's user data.
func (g *Guests) bootVSphere(vm *vspheresim.VM) (*firstBoot, error) {
	extra := vm.ExtraConfig
	if extra["guestinfo.userdata"] == "" {
		return nil, nil
	}
	meta, err := readMetadata(extra)
	if err != nil {
		return nil, err
	}
	ip, err := g.address(vm, meta)
	if err != nil {
		return nil, err
	}
	if err := g.reportTools(vm, meta.LocalHostname, ip); err != nil {
		return nil, fmt.Errorf("VMware Tools: %w", err)
	}
	if vm.BIOSUUID == "" {
		return nil, errors.New("the VM has no BIOS UUID")
	}
	fb := &firstBoot{hostName: meta.LocalHostname, ip: ip}
	if isWindows(vm) {
		build, ok := guestBuilds[vm.GuestID]
		if !ok {
			return nil, fmt.Errorf("guest OS %s: the simulation knows no Windows build for it", vm.GuestID)
		}
		fb.build = build
	}
	return fb, nil
}

func linuxNode(hostname string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: hostname, Labels: map[string]string{
		corev1.LabelHostname: hostname, corev1.LabelArchStable: "amd64",
	}}}
}

func (g *Guests) reject(gs *guest, err error) {
	gs.state = rejected
	g.mu.Lock()
	g.rejected[gs.vmName] = err.Error()
	g.mu.Unlock()
	g.log.Info("Guest refused its user data or failed to join", "vm", gs.vmName, "reason", err.Error())
}

// advance runs the bootstrap once booted (Windows) or starts the kubelet
// (Linux), and acts on a finished run.
func (g *Guests) advance(ctx context.Context, gs *guest, now time.Time) error {
	switch gs.state {
	case booting:
		if now.Before(gs.readyAt) {
			return nil
		}
		if gs.win == nil {
			return g.startLinuxKubelet(gs)
		}
		// cloudbase-init reads the user data now, at this boot.
		userData, err := gs.userData()
		if err != nil {
			g.reject(gs, err)
			return nil
		}
		gs.runs++
		gs.done = make(chan error, 1)
		gs.state = joining
		run := gs.runs
		gs.procs.Go(func() { gs.done <- g.stubRun(gs.ctx, gs, userData, run) })
	case joining:
		select {
		case err := <-gs.done:
			g.afterRun(ctx, gs, err, now)
		default:
		}
	}
	return nil
}

// startLinuxKubelet starts a Linux node's kubelet with the credentials
// kubeadm wrote for it; kubeadm init then marks a control-plane node.
func (g *Guests) startLinuxKubelet(gs *guest) error {
	cs, err := g.linuxKubeletClient(gs.nodeName)
	if err != nil {
		return err
	}
	gs.state = registered
	log := g.log.WithValues("vm", gs.vmName, "node", gs.nodeName)
	gs.procs.Go(func() { gs.kubelet.run(gs.ctx, cs, gs.failure, g.linuxRegistered(gs), log) })
	return nil
}

// linuxRegistered is what follows a Linux kubelet's registration: kubeadm
// marks a control-plane node, and the node counts as joined.
func (g *Guests) linuxRegistered(gs *guest) func(*corev1.Node) {
	log := g.log.WithValues("vm", gs.vmName, "node", gs.nodeName)
	return func(n *corev1.Node) {
		if gs.kubelet.controlPlane {
			if err := g.markControlPlane(gs.ctx, gs.kubelet, n.Name); err != nil {
				log.Error(err, "kubeadm could not mark the control-plane node")
				return
			}
		}
		g.mu.Lock()
		g.joined = append(g.joined, n.Name)
		g.mu.Unlock()
		log.Info("Node registered by its kubelet", "ready", gs.failure != NeverReady)
	}
}

// markControlPlane is kubeadm init's mark-control-plane phase, with
// kubeadm's admin credentials: the control-plane label, and the taint
// unless nodeRegistration.taints is set. (NodeRestriction forbids the
// kubelet the label.)
func (g *Guests) markControlPlane(ctx context.Context, k *kubelet, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := g.workload.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
		n.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		if !hasTaints(k.node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule})
		}
		return g.workload.Update(ctx, n)
	})
}

// guestBuilds is the Windows build of each Windows guest OS the simulation's
// templates may declare. vSphere names each Windows Server release after the
// one before it: windows2019srvNext is Windows Server 2022.
var guestBuilds = map[string]string{
	"windows2019srv_64Guest":     "10.0.17763",
	"windows2019srvNext_64Guest": "10.0.20348",
	"windows2022srvNext_64Guest": "10.0.26100",
}

// metadata is what the guest reads of guestinfo.metadata: its host name
// and its network configuration (cloud-init's network config version 2).
type metadata struct {
	LocalHostname string `json:"local-hostname"`
	// Network is nil when the metadata has no network key.
	Network *struct {
		Ethernets map[string]ethernet `json:"ethernets"`
	} `json:"network"`
}

type ethernet struct {
	Match struct {
		MACAddress string `json:"macaddress"`
		Name       string `json:"name"`
	} `json:"match"`
	DHCP4     bool     `json:"dhcp4"`
	Addresses []string `json:"addresses"`
}

func readMetadata(extra map[string]string) (*metadata, error) {
	data, err := decodeGuestinfo(extra, "guestinfo.metadata")
	if err != nil {
		return nil, err
	}
	meta := &metadata{}
	if err := yaml.Unmarshal(data, meta); err != nil {
		return nil, fmt.Errorf("guestinfo.metadata: %w", err)
	}
	if meta.LocalHostname == "" {
		return nil, errors.New("guestinfo.metadata has no local-hostname")
	}
	return meta, nil
}

// The name the guest's kernel gives the VM's first network device: a
// vmxnet3 NIC on its PCIe slot for Linux, Ethernet0 for Windows.
const (
	linuxNIC   = "ens192"
	windowsNIC = "Ethernet0"
)

// address is the IPv4 address the guest's first network device gets from
// the network configuration, as the guest's software applies it.
//
// cloud-init (Linux) configures an interface only when an entry matches
// it: by its match block (MAC address or name), or by the entry's key when
// it has no match block. The configuration replaces the image's, so a NIC
// no entry matches gets no address at all and the machine never becomes a
// node.
//
// cloudbase-init (Windows; 1.1.7 or later reads the network from
// guestinfo, entries without nameservers included) applies an entry only to the adapter with the entry's MAC
// address; an adapter it does not configure keeps Windows' default, DHCP.
//
// Metadata without a network key leaves each to its default: cloud-init's
// VMware datasource applies its fallback configuration, DHCP on the first
// NIC (the VM's only one here), and Windows keeps DHCP.
//
// DHCP addresses come from the simulated network's server (192.168.0.0/16,
// in order).
func (g *Guests) address(vm *vspheresim.VM, meta *metadata) (string, error) {
	if len(vm.MACs) == 0 {
		return "", errors.New("the VM has no network device")
	}
	mac := vm.MACs[0]
	if meta.Network == nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.lease(), nil
	}
	ids := make([]string, 0, len(meta.Network.Ethernets))
	for id := range meta.Network.Ethernets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var e *ethernet
	for _, id := range ids {
		c := meta.Network.Ethernets[id]
		if isWindows(vm) {
			if strings.EqualFold(c.Match.MACAddress, mac) {
				e = &c
				break
			}
			continue
		}
		switch {
		case c.Match.MACAddress != "" || c.Match.Name != "":
			if (c.Match.MACAddress == "" || strings.EqualFold(c.Match.MACAddress, mac)) && (c.Match.Name == "" || c.Match.Name == linuxNIC) {
				e = &c
			}
		case id == linuxNIC:
			e = &c
		}
		if e != nil {
			break
		}
	}
	if e == nil && !isWindows(vm) {
		return "", fmt.Errorf("cloud-init: no entry of the network configuration (%s) matches network device %s (MAC %s): it gets no address", strings.Join(ids, ", "), linuxNIC, mac)
	}
	if e != nil && len(e.Addresses) > 0 {
		ip, _, err := net.ParseCIDR(e.Addresses[0])
		if err != nil {
			return "", fmt.Errorf("guestinfo.metadata: address %q: %w", e.Addresses[0], err)
		}
		return ip.String(), nil
	}
	if e != nil && !e.DHCP4 {
		return "", fmt.Errorf("guestinfo.metadata: the entry for network device %s (MAC %s) has neither addresses nor dhcp4", linuxNIC, mac)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lease(), nil
}

// lease is the simulated DHCP server's next address; g.mu is held.
func (g *Guests) lease() string {
	g.leases++
	return fmt.Sprintf("192.168.%d.%d", g.leases/250, g.leases%250+2)
}

// reportTools does what VMware Tools does once the guest is up: it
// reports the host name and the addresses of its adapters to vCenter, with
// what a real guest's adapters carry besides their address (IPv6
// link-local addresses). A Windows node's pod network is an HNS switch with
// adapters of its own (vEthernet, with Hyper-V MAC addresses and an APIPA
// address on the one DHCP never answers); the host's address moves to the
// one bound to the VM's network device, and the others have no device
// behind them.
func (g *Guests) reportTools(vm *vspheresim.VM, hostName, ip string) error {
	nics := []vspheresim.GuestNIC{{IPs: []string{ip, "fe80::250:56ff:fe00:1"}}}
	if isWindows(vm) {
		nics = append(nics, vspheresim.GuestNIC{IPs: []string{"172.29.240.1", "169.254.112.5", "fe80::9d3c:1"}, Virtual: true, MAC: "00:15:5d:00:12:01"})
	}
	return g.vc.ReportGuest(vm.ID, hostName, nics)
}

func isWindows(vm *vspheresim.VM) bool {
	return strings.HasPrefix(strings.ToLower(vm.GuestID), "windows")
}

// cutArgs splits a service host's command line at "--": the program's own
// command line follows.
func cutArgs(command []string) (host, program []string, ok bool) {
	i := slices.Index(command, "--")
	if i < 0 {
		return command, nil, false
	}
	return command[:i], command[i+1:], true
}

// kubeletStopped is kube-controller-manager's node lifecycle controller
// for a Node whose kubelet stopped posting its status: Ready turns
// Unknown. (The real one waits out --node-monitor-grace-period, 50 s; the
// simulation does it at once.)
func (g *Guests) kubeletStopped(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := g.workload.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return client.IgnoreNotFound(err)
		}
		now := metav1.Now()
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", now
		}
		return client.IgnoreNotFound(g.workload.Status().Update(ctx, n))
	})
}

// decodeGuestinfo returns a guestinfo key's value, decoded as its .encoding
// key says.
func decodeGuestinfo(extra map[string]string, key string) ([]byte, error) {
	v := extra[key]
	switch enc := extra[key+".encoding"]; enc {
	case "":
		return []byte(v), nil
	case "base64", "b64":
		return base64.StdEncoding.DecodeString(v)
	case "gzip+base64", "gz+b64":
		data, err := userdata.DecodeGzipBase64(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return data, nil
	default:
		return nil, fmt.Errorf("%s.encoding %q is not one cloud-init or cloudbase-init reads", key, enc)
	}
}

// kubeletMaySet is whether a kubelet may put label key on its own Node
// (--node-labels, as the NodeRestriction admission plugin allows).
func kubeletMaySet(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if !strings.HasSuffix(domain, "kubernetes.io") && !strings.HasSuffix(domain, "k8s.io") {
		return true
	}
	for _, d := range []string{"kubelet.kubernetes.io", "node.kubernetes.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	switch key {
	case corev1.LabelHostname, corev1.LabelInstanceType, corev1.LabelInstanceTypeStable, corev1.LabelOSStable, corev1.LabelArchStable,
		corev1.LabelTopologyRegion, corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaRegion, corev1.LabelFailureDomainBetaZone, corev1.LabelWindowsBuild:
		return true
	}
	return false
}
