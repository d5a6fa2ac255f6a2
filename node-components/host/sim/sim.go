package sim

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/capwin/capwin/node-components/host"
)

// Options describe the simulated machine.
type Options struct {
	// Root is the directory that stands for the machine's disks.
	Root string
	// Build is the Windows build (10.0.20348 when empty).
	Build string
	// ComputerName is the computer name (WIN-0 when empty).
	ComputerName string
	// Memory is the physical memory in bytes (DefaultMemory when zero).
	Memory uint64
	// Features are the installed optional features (Containers when nil).
	Features []string
	// Interface is the primary adapter (Ethernet0, 10.0.0.10 in 10.0.0.0/24
	// when empty).
	Interface host.Interface
	// Licence is the Windows licence (ServerDatacenter, Licensed, a KMS
	// client, when empty).
	Licence host.Licence
	// Hardware is what the firmware reports (a vSphere VM, VMwareVM, when
	// empty).
	Hardware host.Hardware
}

// VMwareVM and AzureVM are the SMBIOS facts of a vSphere VM with EFI
// firmware (a BIOS one says "VMware Virtual Platform") and of an Azure VM,
// but for the UUID, which is each VM's own.
var (
	VMwareVM = host.Hardware{Manufacturer: "VMware, Inc.", Product: "VMware7,1", ChassisAssetTag: "No Asset Tag"}
	AzureVM  = host.Hardware{Manufacturer: "Microsoft Corporation", Product: "Virtual Machine", ChassisAssetTag: "7783-7084-3265-9085-8269-3286-77"}
)

// DefaultMemory is a simulated machine's memory unless Options say
// otherwise: 8 GiB, a common size for a Windows worker.
const DefaultMemory = 8 << 30

// Host is a simulated Windows machine. It is safe for concurrent use.
type Host struct {
	fs host.DirFS

	mu           sync.Mutex
	build        string
	computerName string
	memory       uint64
	features     map[string]bool
	iface        host.Interface
	licence      host.Licence
	hardware     host.Hardware
	services     map[string]*service
	networks     []host.Network
	endpoints    []host.Endpoint
	env          map[string]string
	behaviours   map[string]Behaviour
	shell        func(script string) ([]byte, error)
	nextID       int
	// events is what happened, in order, for tests to read.
	events []string
	// adapterResets counts the times creating an HNS network reset the
	// primary adapter.
	adapterResets int
	scripts       []string
}

type service struct {
	spec  host.ServiceSpec
	state host.ServiceState
	// running is the registration the process started with: a change to
	// the registration reaches a running service only when it restarts.
	running host.ServiceSpec
	starts  int
}

// Behaviour is what a simulated service's process does when it starts: it
// acts on the host (and on anything else the test gives it) and returns an
// error when the process would exit at once, which fails the start.
type Behaviour func(ctx context.Context, h *Host, spec host.ServiceSpec) error

// New returns a simulated host.
func New(o Options) *Host {
	h := &Host{
		fs:           host.DirFS{Root: o.Root},
		build:        o.Build,
		computerName: o.ComputerName,
		memory:       o.Memory,
		iface:        o.Interface,
		licence:      o.Licence,
		hardware:     o.Hardware,
		features:     map[string]bool{},
		services:     map[string]*service{},
		env:          map[string]string{},
		behaviours:   map[string]Behaviour{},
	}
	if h.build == "" {
		h.build = "10.0.20348"
	}
	if h.computerName == "" {
		h.computerName = "WIN-0"
	}
	if h.memory == 0 {
		h.memory = DefaultMemory
	}
	if h.iface == (host.Interface{}) {
		h.iface = host.Interface{Name: "Ethernet0", IPv4: "10.0.0.10", Subnet: "10.0.0.0/24"}
	}
	if h.licence == (host.Licence{}) {
		h.licence = host.Licence{Edition: "ServerDatacenter", Status: host.LicenceLicensed, Channel: "VOLUME_KMSCLIENT"}
	}
	if h.hardware == (host.Hardware{}) {
		h.hardware = VMwareVM
	}
	features := o.Features
	if features == nil {
		features = []string{host.FeatureContainers}
	}
	for _, f := range features {
		h.features[f] = true
	}
	return h
}

// Root is the directory standing for the machine's disks.
func (h *Host) Root() string { return h.fs.Root }

// Facts is what the simulated machine reports about itself.
func (h *Host) Facts() host.Facts { return facts{h} }

// Services is the simulated service manager.
func (h *Host) Services() host.Services { return services{h} }

// HNS is the simulated Host Networking Service.
func (h *Host) HNS() host.HNS { return hns{h} }

// Environment is the machine environment.
func (h *Host) Environment() host.Environment { return environment{h} }

// FS is the machine's disks, in the directory Root.
func (h *Host) FS() host.FS { return h.fs }

// Shell is PowerShell, as SetShell says it behaves.
func (h *Host) Shell() host.Shell { return shell{h} }

// OnStart sets what the named service's process does when it starts.
func (h *Host) OnStart(service string, b Behaviour) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.behaviours[service] = b
}

// SetShell sets what PowerShell does with a script; by default every script
// succeeds with no output.
func (h *Host) SetShell(f func(script string) ([]byte, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shell = f
}

// Scripts returns every PowerShell script run, in order.
func (h *Host) Scripts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.scripts)
}

// Events returns what happened on the host, in order ("start kubelet",
// "create-network External", "adapter-reset").
func (h *Host) Events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// AdapterResets is how often creating an HNS network reset the adapter.
func (h *Host) AdapterResets() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.adapterResets
}

// Starts is how often a service has been started (restarts included).
func (h *Host) Starts(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.services[strings.ToLower(name)]; ok {
		return s.starts
	}
	return 0
}

// RunningSpec is the registration a running service started with.
func (h *Host) RunningSpec(name string) (host.ServiceSpec, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.services[strings.ToLower(name)]
	if !ok || s.state != host.ServiceRunning {
		return host.ServiceSpec{}, false
	}
	return clone(s.running), true
}

// SetComputerName changes the computer name, as a rename and its reboot
// would.
func (h *Host) SetComputerName(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.computerName = name
}

// SetMemory changes the physical memory, as resizing the VM would.
func (h *Host) SetMemory(bytes uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.memory = bytes
}

// SetBuild changes the Windows build, as an in-place upgrade would.
func (h *Host) SetBuild(build string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.build = build
}

func (h *Host) event(format string, args ...any) {
	h.events = append(h.events, fmt.Sprintf(format, args...))
}

func (h *Host) id() string {
	h.nextID++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", h.nextID, h.nextID)
}

type facts struct{ h *Host }

func (f facts) Build(context.Context) (string, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.build, nil
}

func (f facts) ComputerName(context.Context) (string, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.computerName, nil
}

func (f facts) TotalMemory(context.Context) (uint64, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.memory, nil
}

func (f facts) Feature(_ context.Context, name string) (bool, error) {
	switch name {
	case host.FeatureContainers, host.FeatureHyperV:
	default:
		return false, fmt.Errorf("unknown Windows feature %q", name)
	}
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.features[name], nil
}

func (f facts) PrimaryInterface(context.Context) (host.Interface, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.iface, nil
}

func (f facts) Licence(context.Context) (host.Licence, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.licence, nil
}

func (f facts) Hardware(context.Context) (host.Hardware, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.hardware, nil
}

type environment struct{ h *Host }

// Windows environment variable names are case-insensitive.
func (e environment) Get(_ context.Context, name string) (string, bool, error) {
	if err := host.CheckEnvironmentName(name); err != nil {
		return "", false, fmt.Errorf("reading machine environment variable: %w", err)
	}
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	v, ok := e.h.env[strings.ToUpper(name)]
	return v, ok, nil
}

func (e environment) Set(_ context.Context, name, value string) error {
	if err := host.CheckEnvironment(name, value); err != nil {
		return fmt.Errorf("setting machine environment variable: %w", err)
	}
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	e.h.env[strings.ToUpper(name)] = value
	return nil
}

func (e environment) Unset(_ context.Context, name string) error {
	if err := host.CheckEnvironmentName(name); err != nil {
		return fmt.Errorf("removing machine environment variable: %w", err)
	}
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	delete(e.h.env, strings.ToUpper(name))
	return nil
}

type shell struct{ h *Host }

func (s shell) Run(ctx context.Context, script string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.h.mu.Lock()
	s.h.scripts = append(s.h.scripts, script)
	f := s.h.shell
	s.h.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	return f(script)
}

type hns struct{ h *Host }

func (n hns) Networks(context.Context) ([]host.Network, error) {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	return slices.Clone(n.h.networks), nil
}

func (n hns) CreateNetwork(_ context.Context, nw host.Network) (host.Network, error) {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	if _, _, err := host.CheckNetwork(nw); err != nil {
		return host.Network{}, fmt.Errorf("creating HNS network %s: %w", nw.Name, err)
	}
	if nw.AdapterName != "" && !strings.EqualFold(nw.AdapterName, n.h.iface.Name) {
		return host.Network{}, fmt.Errorf("creating HNS network %q: no network adapter named %q", nw.Name, nw.AdapterName)
	}
	// HNS accepts two networks of one name; the agent must not make one.
	nw.ID = n.h.id()
	nw.ManagementIP = n.h.iface.IPv4
	if len(n.h.networks) == 0 {
		// The host's first HNS network binds a virtual switch to the adapter:
		// the adapter resets and the host is unreachable for a few seconds.
		n.h.adapterResets++
		n.h.event("adapter-reset")
	}
	n.h.networks = append(n.h.networks, nw)
	n.h.event("create-network %s", nw.Name)
	return nw, nil
}

func (n hns) DeleteNetwork(_ context.Context, id string) error {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	i := slices.IndexFunc(n.h.networks, func(nw host.Network) bool { return nw.ID == id })
	if i < 0 {
		return fmt.Errorf("HNS network %s: %w", id, host.ErrNotExist)
	}
	for _, e := range n.h.endpoints {
		if e.NetworkID == id {
			return fmt.Errorf("deleting HNS network %s: endpoint %s still attached", id, e.ID)
		}
	}
	n.h.event("delete-network %s", n.h.networks[i].Name)
	n.h.networks = slices.Delete(n.h.networks, i, i+1)
	return nil
}

func (n hns) Endpoints(context.Context) ([]host.Endpoint, error) {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	return slices.Clone(n.h.endpoints), nil
}

func (n hns) DeleteEndpoint(_ context.Context, id string) error {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	i := slices.IndexFunc(n.h.endpoints, func(e host.Endpoint) bool { return e.ID == id })
	if i < 0 {
		return fmt.Errorf("HNS endpoint %s: %w", id, host.ErrNotExist)
	}
	n.h.endpoints = slices.Delete(n.h.endpoints, i, i+1)
	return nil
}

// CreateEndpoint adds an HNS endpoint on a network, as kube-proxy does for
// its source VIP and a CNI plugin does for a pod. A pod cannot be networked
// before its HNS network exists.
func (h *Host) CreateEndpoint(e host.Endpoint) (host.Endpoint, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.networks, func(nw host.Network) bool { return nw.ID == e.NetworkID || nw.Name == e.NetworkID })
	if i < 0 {
		return host.Endpoint{}, fmt.Errorf("creating HNS endpoint %s: network %s: %w", e.Name, e.NetworkID, host.ErrNotExist)
	}
	nw := h.networks[i]
	p, _ := netip.ParsePrefix(nw.AddressPrefix)
	if a, err := netip.ParseAddr(e.IPAddress); err != nil || !p.Contains(a) {
		return host.Endpoint{}, fmt.Errorf("creating HNS endpoint %s: %q is not in network %s (%s)", e.Name, e.IPAddress, nw.Name, nw.AddressPrefix)
	}
	for _, o := range h.endpoints {
		if o.NetworkID == nw.ID && o.IPAddress == e.IPAddress {
			return host.Endpoint{}, fmt.Errorf("creating HNS endpoint %s: %s is already endpoint %s", e.Name, e.IPAddress, o.ID)
		}
	}
	e.ID = h.id()
	e.NetworkID = nw.ID
	h.endpoints = append(h.endpoints, e)
	h.event("create-endpoint %s %s", nw.Name, e.IPAddress)
	return e, nil
}
