package host

import (
	"context"
	"errors"
	"time"
)

// Host is everything the agent asks of the machine it runs on.
type Host interface {
	Facts() Facts
	Services() Services
	HNS() HNS
	Environment() Environment
	FS() FS
	Shell() Shell
}

// ErrNotExist is returned (wrapped) for a service, HNS network or endpoint
// that does not exist.
var ErrNotExist = errors.New("does not exist")

// Facts are what the agent reads about the machine itself.
type Facts interface {
	// Build is the host's Windows build, major.minor.build (10.0.20348).
	Build(ctx context.Context) (string, error)
	// ComputerName is the machine's computer name, as Windows reports it.
	ComputerName(ctx context.Context) (string, error)
	// TotalMemory is the physical memory the operating system can use, in
	// bytes: what the kubelet reports as the Node's memory capacity.
	TotalMemory(ctx context.Context) (uint64, error)
	// Feature reports whether a Windows optional feature (FeatureContainers,
	// FeatureHyperV) is installed and enabled.
	Feature(ctx context.Context, name string) (bool, error)
	// PrimaryInterface is the network adapter that carries the default
	// route: the one an HNS network attaches to.
	PrimaryInterface(ctx context.Context) (Interface, error)
	// Licence is the Windows licence the machine runs under.
	Licence(ctx context.Context) (Licence, error)
	// Hardware is what the machine's firmware says it is (SMBIOS).
	Hardware(ctx context.Context) (Hardware, error)
}

// Licence is Windows' licence state, as the Software Licensing service
// reports it for the operating system.
type Licence struct {
	// Edition is Windows' EditionID: ServerDatacenter, or
	// ServerDatacenterEval for an evaluation.
	Edition string `json:"edition"`
	// Evaluation is true for an evaluation edition, which runs for about
	// 180 days from the machine's first boot; Windows then shuts the
	// machine down every hour.
	Evaluation bool `json:"evaluation"`
	// Status is one of the LicenceStatus values.
	Status LicenceStatus `json:"status"`
	// RemainingMinutes is what is left of the licence's period, in minutes,
	// as Windows counts it: of an evaluation, of a grace period, or of a
	// KMS activation (which the client renews long before its end); zero
	// when none runs.
	RemainingMinutes int64 `json:"remainingMinutes,omitempty"`
	// Channel is how the licence was issued, from the licence's
	// description: VOLUME_KMSCLIENT, RETAIL, TIMEBASED_EVAL, ...
	Channel string `json:"channel,omitempty"`
}

// LicenceStatus is the Software Licensing service's LicenseStatus.
type LicenceStatus string

// The licence states, in the Software Licensing service's order (0 to 6).
const (
	LicenceUnlicensed      LicenceStatus = "Unlicensed"
	LicenceLicensed        LicenceStatus = "Licensed"
	LicenceOOBGrace        LicenceStatus = "OOBGrace"
	LicenceOOTGrace        LicenceStatus = "OOTGrace"
	LicenceNonGenuineGrace LicenceStatus = "NonGenuineGrace"
	LicenceNotification    LicenceStatus = "Notification"
	LicenceExtendedGrace   LicenceStatus = "ExtendedGrace"
)

// The optional features the agent checks.
const (
	FeatureContainers = "Containers"
	FeatureHyperV     = "Microsoft-Hyper-V"
)

// Interface is a network adapter.
type Interface struct {
	// Name is the adapter's name (Ethernet0).
	Name string `json:"name"`
	// IPv4 is its first IPv4 address, without prefix length.
	IPv4 string `json:"ipv4"`
	// Subnet is the IPv4 subnet of that address (10.0.0.0/24).
	Subnet string `json:"subnet"`
}

// StartType is when the service manager starts a service.
type StartType string

// The start types capwin uses.
const (
	StartAutomatic StartType = "Automatic"
	StartManual    StartType = "Manual"
	StartDisabled  StartType = "Disabled"
)

// ServiceSpec is a Windows service as the agent registers it.
type ServiceSpec struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	Description string `json:"description,omitempty"`
	// Command is the executable's absolute path and its arguments; the
	// service manager's command line is CommandLine(Command).
	Command []string `json:"command"`
	// Environment is the service's own environment (NAME=value), on top of
	// the machine's.
	Environment []string `json:"environment,omitempty"`
	// Dependencies are services that must run before this one starts.
	Dependencies []string  `json:"dependencies,omitempty"`
	StartType    StartType `json:"startType"`
	// RestartDelays are the service manager's recovery actions: restart
	// after each delay in turn, the last one repeating. Empty: no restart.
	RestartDelays []time.Duration `json:"restartDelays,omitempty"`
	// ResetPeriod is how long a service must run before its failure count
	// starts again from the first delay.
	ResetPeriod time.Duration `json:"resetPeriod,omitempty"`
}

// ServiceState is a service's run state.
type ServiceState string

// The states a service passes through.
const (
	ServiceStopped  ServiceState = "Stopped"
	ServiceStarting ServiceState = "StartPending"
	ServiceRunning  ServiceState = "Running"
	ServiceStopping ServiceState = "StopPending"
)

// Services is the Windows service control manager.
type Services interface {
	// Get returns a service's registration and state, or ErrNotExist.
	Get(ctx context.Context, name string) (ServiceSpec, ServiceState, error)
	// Create registers a new service; it is an error if it exists.
	Create(ctx context.Context, spec ServiceSpec) error
	// Update changes an existing service's registration to spec.
	Update(ctx context.Context, spec ServiceSpec) error
	// Delete stops (if needed) and removes a service.
	Delete(ctx context.Context, name string) error
	// Start starts a service (and, as the service manager does, the
	// services it depends on) and returns once it runs.
	Start(ctx context.Context, name string) error
	// Stop stops a service and returns once it stopped.
	Stop(ctx context.Context, name string) error
}

// NetworkType is an HNS network type.
type NetworkType string

// The HNS network types the pod networks use.
const (
	Overlay  NetworkType = "Overlay"
	L2Bridge NetworkType = "L2Bridge"
)

// Network is an HNS network.
type Network struct {
	// ID is assigned by HNS.
	ID   string      `json:"id,omitempty"`
	Name string      `json:"name"`
	Type NetworkType `json:"type"`
	// AdapterName is the physical adapter the network attaches to.
	AdapterName string `json:"adapterName,omitempty"`
	// AddressPrefix and Gateway are the network's one subnet.
	AddressPrefix string `json:"addressPrefix"`
	Gateway       string `json:"gateway"`
	// VSID is the overlay subnet's virtual subnet ID; 0 for L2Bridge.
	VSID uint32 `json:"vsid,omitempty"`
	// ManagementIP is the host's address on the adapter, as HNS reports it.
	ManagementIP string `json:"managementIP,omitempty"`
	// NonPersistent networks are gone after a reboot (flannel makes its own
	// so, and makes them again when it starts); others stay.
	NonPersistent bool `json:"nonPersistent,omitempty"`
}

// Endpoint is an HNS endpoint.
type Endpoint struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	NetworkID string `json:"networkID"`
	IPAddress string `json:"ipAddress"`
	// Remote endpoints stand for addresses on other hosts (or, for
	// kube-proxy's source VIP, on this host's overlay).
	Remote bool `json:"remote,omitempty"`
}

// HNS is the Host Networking Service.
type HNS interface {
	Networks(ctx context.Context) ([]Network, error)
	// CreateNetwork creates a network and returns it as HNS reports it.
	CreateNetwork(ctx context.Context, n Network) (Network, error)
	DeleteNetwork(ctx context.Context, id string) error
	Endpoints(ctx context.Context) ([]Endpoint, error)
	DeleteEndpoint(ctx context.Context, id string) error
}

// Environment is the machine-wide environment (what System Properties shows
// under System variables), read by services when they start.
type Environment interface {
	Get(ctx context.Context, name string) (value string, ok bool, err error)
	Set(ctx context.Context, name, value string) error
	Unset(ctx context.Context, name string) error
}

// Shell runs PowerShell.
type Shell interface {
	// Run runs one PowerShell script and returns its combined output; a
	// non-zero exit is an error that includes the exit code.
	Run(ctx context.Context, script string) (output []byte, err error)
}
