package sim

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"

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
// is powered on it reads guestinfo.userdata and guestinfo.metadata as
// cloudbase-init or cloud-init would, brings its network up and reports its
// host name and address to vCenter as VMware Tools does. A Windows guest
// checks its user data as the node would: the script is capwin's stub, the
// node configuration passes node-components validation, the bootstrap token
// exists in the workload cluster and is unexpired, and the CA hash is the
// workload API server's CA. As capwin-node does, it names the node after
// the configuration's nodeName or, without one, after the VM's host name in
// lower case, which must be a valid node name. A Linux guest reads the
// kubeadm configuration its cloud-config writes. After the boot delay its
// kubelet registers the Node with what the real kubelet would write given
// its flags (see kubelet) and marks it Ready.
// A guest whose check fails registers nothing, as a node whose join failed,
// and says why in Rejected.
type Guests struct {
	vc        *vspheresim.VCenter
	vms       *vspheresim.Watcher
	workload  client.Client
	caHash    string
	bootDelay time.Duration
	log       logr.Logger

	mu       sync.Mutex
	guests   map[string]*guest // by VM managed object ID
	failure  func(nodeName string) Failure
	rejected map[string]string // VM name: why
	joined   []string
	leases   int // DHCP addresses handed out

	bootstrap bootstraps // the Windows guests' runs of the bootstrap stub (cloudbaseinit.go)
}

type guest struct {
	vmName    string
	token     string // the bootstrap token a Windows node joins with
	poweredOn time.Time
	kubelet   *kubelet
	node      *corev1.Node // as registered
	failure   Failure
	state     guestState
	readyAt   time.Time
}

type guestState int

const (
	booting guestState = iota
	registered
	degraded
	ignored
	rejected
)

// pollInterval is how often the guests look at vCenter.
const pollInterval = 100 * time.Millisecond

func newGuests(ctx context.Context, vc *vspheresim.VCenter, workload client.Client, caPEM []byte, bootDelay time.Duration, log logr.Logger) (*Guests, error) {
	hash, err := spkiHash(caPEM)
	if err != nil {
		return nil, fmt.Errorf("the workload cluster's CA: %w", err)
	}
	w, err := vc.Watch(ctx)
	if err != nil {
		return nil, fmt.Errorf("the guests watching vCenter's VMs: %w", err)
	}
	return &Guests{
		vc: vc, vms: w, workload: workload, caHash: hash, bootDelay: bootDelay, log: log,
		guests: map[string]*guest{}, rejected: map[string]string{},
		failure: func(string) Failure { return Healthy },
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

// Rejected returns the VMs whose user data a node would have refused, with
// the reason.
func (g *Guests) Rejected() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]string, len(g.rejected))
	for k, v := range g.rejected {
		out[k] = v
	}
	return out
}

// Joined returns the names of the Nodes the guests registered, in order.
func (g *Guests) Joined() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.joined)
}

func (g *Guests) run(ctx context.Context) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if err := g.step(ctx); err != nil && ctx.Err() == nil {
			g.log.Error(err, "Guest step failed")
		}
		select {
		case <-ctx.Done():
			g.vms.Close(context.Background())
			return
		case <-t.C:
		}
	}
}

// step looks at every VM once and moves each guest on.
func (g *Guests) step(ctx context.Context) error {
	vms, err := g.vms.VMs(ctx)
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
			gs = g.boot(vm, now)
			g.mu.Lock()
			g.guests[id] = gs
			g.mu.Unlock()
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
		}
	}
	g.mu.Unlock()
	for _, gs := range gone {
		if gs.state == registered || gs.state == degraded {
			// Its kubelet is gone: the Node, if Cluster API has not
			// deleted it yet, stops being Ready.
			errs = append(errs, g.setReady(ctx, gs.node.Name, false))
		}
	}
	return errors.Join(errs...)
}

// boot is a guest's first look at its VM: it reads its metadata, brings
// its network up (VMware Tools reports it), and checks its user data.
func (g *Guests) boot(vm *vspheresim.VM, now time.Time) *guest {
	gs := &guest{vmName: vm.Name, poweredOn: now}
	extra := vm.ExtraConfig
	if extra["guestinfo.userdata"] == "" {
		gs.state = ignored // not a machine of capwin's: the inventory's own VMs
		return gs
	}
	meta, err := readMetadata(extra)
	if err != nil {
		g.reject(gs, err)
		return gs
	}
	ip, err := g.address(vm, meta)
	if err != nil {
		g.reject(gs, err)
		return gs
	}
	if err := g.reportTools(vm, meta.LocalHostname, ip); err != nil {
		g.reject(gs, fmt.Errorf("VMware Tools: %w", err))
		return gs
	}
	k, token, err := g.check(vm, extra, meta, ip)
	if err != nil {
		g.reject(gs, err)
		return gs
	}
	gs.kubelet, gs.token = k, token
	g.mu.Lock()
	gs.failure = g.failure(k.node.Name)
	gs.readyAt = now.Add(g.bootDelay)
	g.mu.Unlock()
	return gs
}

func (g *Guests) reject(gs *guest, err error) {
	gs.state = rejected
	g.mu.Lock()
	g.rejected[gs.vmName] = err.Error()
	g.mu.Unlock()
	g.log.Info("Guest refused its user data", "vm", gs.vmName, "reason", err.Error())
}

// advance registers the Node once booted and plays the failure modes.
func (g *Guests) advance(ctx context.Context, gs *guest, now time.Time) error {
	switch gs.state {
	case booting:
		if now.Before(gs.readyAt) {
			return nil
		}
		// capwin-node join uses the token now, after the boot, not at
		// power-on; cloudbase-init's rules decide what follows a failure.
		if gs.token != "" && !g.runBootstrap(ctx, gs, now) {
			return nil
		}
		ready := gs.failure != NeverReady
		gs.node = gs.kubelet.register()
		if err := g.register(ctx, gs.node, ready); err != nil {
			return err
		}
		gs.state = registered
		g.mu.Lock()
		g.joined = append(g.joined, gs.node.Name)
		g.mu.Unlock()
		g.log.Info("Node registered", "node", gs.node.Name, "vm", gs.vmName, "ready", ready)
	case registered:
		if gs.failure == ReadyThenNotReady && now.After(gs.readyAt.Add(time.Second)) {
			if err := g.setReady(ctx, gs.node.Name, false); err != nil {
				return err
			}
			gs.state = degraded
			g.log.Info("Node went NotReady", "node", gs.node.Name)
		}
	}
	return nil
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
	Network       struct {
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
// DHCP addresses come from the simulated network's server (192.168.0.0/16,
// in order).
func (g *Guests) address(vm *vspheresim.VM, meta *metadata) (string, error) {
	if len(vm.MACs) == 0 {
		return "", errors.New("the VM has no network device")
	}
	mac := vm.MACs[0]
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
	g.leases++
	return fmt.Sprintf("192.168.%d.%d", g.leases/250, g.leases%250+2), nil
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

// check reads the VM's guestinfo as the node would and returns the kubelet
// it would run and, for Windows, the bootstrap token it would join with.
// Whether the guest is Windows is the VM's (its guest ID, from its
// template), not its user data's.
func (g *Guests) check(vm *vspheresim.VM, extra map[string]string, meta *metadata, ip string) (*kubelet, string, error) {
	userData, err := decodeGuestinfo(extra, "guestinfo.userdata")
	if err != nil {
		return nil, "", err
	}
	if vm.BIOSUUID == "" {
		return nil, "", errors.New("the VM has no BIOS UUID")
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: meta.LocalHostname, Labels: map[string]string{
			corev1.LabelHostname:   meta.LocalHostname,
			corev1.LabelArchStable: "amd64",
		}},
	}
	if !isWindows(vm) {
		return linuxKubelet(node, userData, meta.LocalHostname, ip)
	}
	data, err := payload.ParseScript(userData)
	if err != nil {
		return nil, "", err
	}
	cfg, err := nodeconfig.Parse(data)
	if err != nil {
		return nil, "", err
	}
	if err := cfg.Validate(); err != nil {
		return nil, "", fmt.Errorf("node configuration: %w", err)
	}
	name := cfg.NodeName
	if name == "" {
		name = strings.ToLower(meta.LocalHostname)
		if err := nodeconfig.CheckNodeName(name); err != nil {
			return nil, "", fmt.Errorf("the node takes its computer name %q, which is not a valid node name: %w", meta.LocalHostname, err)
		}
	}
	node.Name, node.Labels[corev1.LabelHostname] = name, name
	build, ok := guestBuilds[vm.GuestID]
	if !ok {
		return nil, "", fmt.Errorf("guest OS %s: the simulation knows no Windows build for it", vm.GuestID)
	}
	if cfg.WindowsBuild != "" && !strings.HasPrefix(cfg.WindowsBuild+".", build+".") {
		return nil, "", fmt.Errorf("the host runs Windows build %s but the configuration's windowsBuild is %s", build, cfg.WindowsBuild)
	}
	if !slices.Contains(cfg.Join.CACertHashes, g.caHash) {
		return nil, "", fmt.Errorf("no CA hash of %v is the workload cluster's CA (%s)", cfg.Join.CACertHashes, g.caHash)
	}
	node.Labels[corev1.LabelOSStable] = "windows"
	node.Labels[corev1.LabelWindowsBuild] = build
	for k, v := range cfg.Labels {
		if !kubeletMaySet(k) {
			return nil, "", fmt.Errorf("the kubelet refuses to set label %s on its Node (kubernetes.io and k8s.io labels are reserved)", k)
		}
		node.Labels[k] = v
	}
	for _, t := range cfg.Taints {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	node.Status.NodeInfo = corev1.NodeSystemInfo{
		OperatingSystem: "windows", Architecture: "amd64",
		KubeletVersion: cfg.KubernetesVersion, KernelVersion: build,
	}
	// The kubelet runs with the flags the agent gives its service.
	cfg.NodeName = name
	k := &kubelet{node: node, hostIP: ip}
	for _, svc := range render.Services(cfg, host.Interface{Name: "Ethernet0", IPv4: ip}) {
		if svc.Name == layout.ServiceKubelet {
			_, argv, _ := cutArgs(svc.Command)
			k.flags = kubeletFlags(argv)
		}
	}
	if k.flags == nil {
		return nil, "", errors.New("the agent renders no kubelet service")
	}
	if err := k.check(); err != nil {
		return nil, "", err
	}
	return k, cfg.Join.Token, nil
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

// checkToken does what kubeadm join's TLS bootstrap relies on: the token's
// Secret exists, matches, may authenticate and has not expired.
func (g *Guests) checkToken(ctx context.Context, token string) error {
	id, secret, ok := strings.Cut(token, ".")
	if !ok {
		return errors.New("the bootstrap token is not id.secret")
	}
	s := &corev1.Secret{}
	if err := g.workload.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, s); err != nil {
		return fmt.Errorf("bootstrap token %s: %w", id, err)
	}
	if string(s.Data["token-secret"]) != secret {
		return fmt.Errorf("bootstrap token %s: the secret does not match", id)
	}
	if string(s.Data["usage-bootstrap-authentication"]) != "true" {
		return fmt.Errorf("bootstrap token %s may not authenticate", id)
	}
	if exp := string(s.Data["expiration"]); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			return fmt.Errorf("bootstrap token %s: expiration %q: %w", id, exp, err)
		}
		if time.Now().After(t) {
			return fmt.Errorf("bootstrap token %s %w at %s", id, errTokenExpired, exp)
		}
	}
	return nil
}

func (g *Guests) register(ctx context.Context, node *corev1.Node, ready bool) error {
	n := node.DeepCopy()
	if err := g.workload.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering Node %s: %w", node.Name, err)
	}
	return g.updateStatus(ctx, node.Name, &node.Status, ready)
}

func (g *Guests) setReady(ctx context.Context, name string, ready bool) error {
	return g.updateStatus(ctx, name, nil, ready)
}

// updateStatus writes the Node's Ready condition and, when given, the
// kubelet's first status: its system information and, unless a cloud
// controller manager has set them already, its addresses.
func (g *Guests) updateStatus(ctx context.Context, name string, first *corev1.NodeStatus, ready bool) error {
	n := &corev1.Node{}
	if err := g.workload.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return client.IgnoreNotFound(err)
	}
	if first != nil {
		n.Status.NodeInfo = first.NodeInfo
		if len(n.Status.Addresses) == 0 {
			n.Status.Addresses = first.Addresses
		}
	}
	now := metav1.Now()
	cond := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}
	if !ready {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready"
	}
	// The kubelet's other conditions, as a healthy Windows kubelet reports
	// them; Cluster API's NodeHealthy looks at them all.
	conds := []corev1.NodeCondition{cond}
	for _, c := range []struct {
		t      corev1.NodeConditionType
		reason string
	}{
		{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory"},
		{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure"},
		{corev1.NodePIDPressure, "KubeletHasSufficientPID"},
	} {
		conds = append(conds, corev1.NodeCondition{Type: c.t, Status: corev1.ConditionFalse, Reason: c.reason, LastHeartbeatTime: now, LastTransitionTime: now})
	}
	n.Status.Conditions = conds
	return client.IgnoreNotFound(g.workload.Status().Update(ctx, n))
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

// spkiHash is kubeadm's discovery hash of a PEM certificate.
func spkiHash(caPEM []byte) (string, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return "", errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
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
