package payload

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/internal/userdata"
	"github.com/capwin/capwin/node-components/exitcode"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/noderules"
)

// MaxSize is the platforms' user-data limit: Azure takes up to 65535 bytes
// of customData (before its base64 encoding), a vSphere guestinfo key 64
// KiB; the smaller holds for both.
const MaxSize = 65535

// Format is the value of the data Secret's format key.
const Format = "powershell"

// stub is the PowerShell every node runs; placeholder is replaced by the
// base64 node configuration and by nothing else.
//
//go:embed stub.ps1
var stub string

const placeholder = "__CAPWIN_NODE_CONFIG__"

// Stub returns the constant bootstrap script with its placeholder.
func Stub() string { return stub }

// The stub's exit codes, which tell cloudbase-init what to do next.
// cloudbase-init runs PowerShell user data with powershell.exe -File
// (cloudbaseinit/osutils/windows.py, execute_powershell_script), whose exit
// code is that of the script's exit statement, or 1 when an error stops the
// script. It reads codes 1001 to 1003 as two flags
// (cloudbaseinit/plugins/common/execcmd.py, get_plugin_return_value): 1
// reboots the machine now, 2 leaves the user data plugin to run again at the
// next boot; 1001 reboots only, 1002 runs again without a reboot, 1003 does
// both. Every other code marks the plugin done, and a plugin marked done
// never runs again on that instance (cloudbaseinit/init.py, _exec_plugin).
// The reboot needs cloudbase-init's allow_reboot, true by default.
// Checked against cloudbase-init 1.1.4 and 1.1.8.
const (
	// StubExitJoined: the node joined; done.
	StubExitJoined = 0
	// StubExitFailed: a failure that will not pass; done for good.
	StubExitFailed = 1
	// StubExitRunAgainAtNextBoot: a failure that may pass, with no
	// automatic attempt left; the stub runs again when the machine next
	// boots, for whatever reason.
	StubExitRunAgainAtNextBoot = 1002
	// StubExitRebootAndRunAgain: a failure that may pass; cloudbase-init
	// reboots the machine and runs the stub again.
	StubExitRebootAndRunAgain = 1003
)

// MaxAttempts is the last attempt of the stub whose failure that may pass
// reboots the machine: a node that cannot join reboots MaxAttempts-1 times,
// not forever. The stub counts its attempts on the node's disk.
const MaxAttempts = 5

// StubExitCode is the stub's exit code after its attempt-th run (counted
// from 1, across reboots) in which capwin-node join exited with joinExit
// (node-components/exitcode). The stub's own failures before the join
// count as exitcode.Retry (a download that failed) or as any other code
// (no agent to run, a checksum that does not match). The stub implements
// this in PowerShell; its tests hold the two together.
func StubExitCode(joinExit, attempt int) int {
	switch {
	case joinExit == exitcode.OK:
		return StubExitJoined
	case joinExit != exitcode.Retry:
		return StubExitFailed
	case attempt < MaxAttempts:
		return StubExitRebootAndRunAgain
	}
	return StubExitRunAgainAtNextBoot
}

// Input is what a node's configuration is computed from.
type Input struct {
	// Spec is the WindowsKubeadmConfig spec; defaults are applied to a copy.
	Spec *bootstrapv1.WindowsKubeadmConfigSpec

	KubernetesVersion string

	// NodeName, when set, names the node. The reconciler leaves it empty:
	// the node then takes its own computer name, which the infrastructure
	// provider set. capwin render --node-name sets it.
	NodeName string
	// WindowsBuild, when set (10.0.20348), makes the node refuse a host of
	// another build. The reconciler leaves it empty; capwin render
	// --windows-release sets it. The node.kubernetes.io/windows-build label
	// is the kubelet's own, from the host, either way.
	WindowsBuild string

	// ControlPlaneHost and ControlPlanePort are the Cluster's endpoint.
	ControlPlaneHost string
	ControlPlanePort int32
	Token            string
	CACertHashes     []string
	// ProgressConfigMap names the ConfigMap in the workload cluster's
	// capwin-node-bootstrap namespace the node reports its join progress
	// to (join.progressConfigMap). The reconciler sets it to the Machine's
	// name; empty, the node reports only on its own disk.
	ProgressConfigMap string

	PodCIDRs     []string
	ServiceCIDRs []string

	// FileContent returns the content of a file whose contentFrom names a
	// Secret key.
	FileContent func(bootstrapv1.SecretKeyReference) ([]byte, error)
}

// Payload is what a node receives.
type Payload struct {
	// Config is the node configuration.
	Config *nodeconfig.Config
	// JSON is Config as sent.
	JSON []byte
	// Script is the user data: the stub with the base64 JSON.
	Script []byte
}

// Render computes a node's configuration, validates it as the node will, and
// renders the bootstrap script.
func Render(in Input) (*Payload, error) {
	cfg, err := NodeConfig(in)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// What the node would refuse to render: labels it cannot pass to the
	// kubelet, flags the agent sets itself, registry mirrors that cannot
	// become hosts files (the agent applies the same noderules.Check).
	if err := noderules.Check(cfg); err != nil {
		return nil, err
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the node configuration: %w", err)
	}
	script := bytes.Replace([]byte(stub), []byte(placeholder), []byte(base64.StdEncoding.EncodeToString(data)), 1)
	return &Payload{Config: cfg, JSON: data, Script: script}, nil
}

// GzipBase64 is the script gzipped and base64-encoded, as vSphere guestinfo
// carries it (guestinfo.userdata.encoding = gzip+base64); the vSphere
// platform encodes with the same function.
func (p *Payload) GzipBase64() (string, error) { return userdata.GzipBase64(p.Script) }

// ErrTooLarge is returned by CheckSize for a payload over MaxSize.
var ErrTooLarge = errors.New("bootstrap payload too large")

// CheckSize returns ErrTooLarge, with the sizes, when the script is over the
// platforms' limit.
func (p *Payload) CheckSize() error {
	if len(p.Script) > MaxSize {
		return fmt.Errorf("%w: %d bytes, the limit is %d (files and commands make up most of it)", ErrTooLarge, len(p.Script), MaxSize)
	}
	return nil
}

// NodeConfig computes the node configuration from the input.
func NodeConfig(in Input) (*nodeconfig.Config, error) {
	if in.Spec == nil {
		return nil, errors.New("no WindowsKubeadmConfig spec")
	}
	s := in.Spec.DeepCopy()
	s.Default()

	cfg := &nodeconfig.Config{
		SchemaVersion:     nodeconfig.SchemaVersion,
		NodeName:          in.NodeName,
		KubernetesVersion: in.KubernetesVersion,
		WindowsBuild:      in.WindowsBuild,
		Join: nodeconfig.Join{
			APIServerEndpoint: net.JoinHostPort(in.ControlPlaneHost, strconv.Itoa(int(in.ControlPlanePort))),
			Token:             in.Token,
			CACertHashes:      in.CACertHashes,
			ProgressConfigMap: in.ProgressConfigMap,
		},
		Labels:           map[string]string{},
		CSIProxy:         deref(s.CSIProxy.Enabled),
		PreJoinCommands:  s.PreJoinCommands,
		PostJoinCommands: s.PostJoinCommands,
	}
	for k, v := range s.NodeRegistration.Labels {
		cfg.Labels[k] = v
	}
	for _, t := range s.NodeRegistration.Taints {
		cfg.Taints = append(cfg.Taints, nodeconfig.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}

	cfg.Kubelet = nodeconfig.Kubelet{
		SystemReserved: quantities(s.Kubelet.SystemReserved),
		KubeReserved:   quantities(s.Kubelet.KubeReserved),
		ExtraArgs:      args(s.NodeRegistration.KubeletExtraArgs),
	}
	cfg.Containerd = nodeconfig.Containerd{
		PauseImage: s.Containerd.PauseImage,
		Isolation:  string(s.Containerd.Isolation),
	}
	for _, m := range s.Containerd.RegistryMirrors {
		cfg.Containerd.RegistryMirrors = append(cfg.Containerd.RegistryMirrors, nodeconfig.RegistryMirror{Registry: m.Registry, Endpoints: m.Endpoints})
	}

	cfg.Network = nodeconfig.Network{
		CNI:          string(s.Network.CNI),
		Mode:         string(s.Network.Mode),
		PodCIDRs:     in.PodCIDRs,
		ServiceCIDRs: in.ServiceCIDRs,
		NodeSubnet:   s.Network.NodeSubnet,
		OutboundNATExceptions: unique(in.PodCIDRs, in.ServiceCIDRs,
			nonEmpty(s.Network.NodeSubnet), s.Network.OutboundNATExceptions),
	}
	if s.Network.Mode == bootstrapv1.Overlay {
		cfg.Network.VXLANVNI = int(s.Network.VXLAN.VNI)
		cfg.Network.VXLANPort = int(s.Network.VXLAN.Port)
	}
	cfg.KubeProxy = nodeconfig.KubeProxy{EnableDSR: deref(s.KubeProxy.EnableDSR), ExtraArgs: args(s.KubeProxy.ExtraArgs)}

	if p := s.Proxy; p.HTTPProxy != "" || p.HTTPSProxy != "" {
		cfg.Proxy = &nodeconfig.Proxy{
			HTTPProxy:  p.HTTPProxy,
			HTTPSProxy: p.HTTPSProxy,
			// The node must reach the control plane, pods, services and its
			// own network directly.
			NoProxy: unique([]string{"localhost", "127.0.0.1", in.ControlPlaneHost},
				in.PodCIDRs, in.ServiceCIDRs, nonEmpty(s.Network.NodeSubnet), p.NoProxy),
		}
	}

	for _, f := range s.Files {
		content, err := fileContent(f, in.FileContent)
		if err != nil {
			return nil, err
		}
		cfg.Files = append(cfg.Files, nodeconfig.File{Path: f.Path, Content: content})
	}
	return cfg, nil
}

func fileContent(f bootstrapv1.File, resolve func(bootstrapv1.SecretKeyReference) ([]byte, error)) (string, error) {
	if f.ContentFrom != nil {
		if resolve == nil {
			return "", fmt.Errorf("file %s: content from Secret %s key %s cannot be read here", f.Path, f.ContentFrom.Secret.Name, f.ContentFrom.Secret.Key)
		}
		data, err := resolve(f.ContentFrom.Secret)
		if err != nil {
			return "", fmt.Errorf("file %s: reading Secret %s key %s: %w", f.Path, f.ContentFrom.Secret.Name, f.ContentFrom.Secret.Key, err)
		}
		return base64.StdEncoding.EncodeToString(data), nil
	}
	if f.Encoding == "base64" {
		return f.Content, nil
	}
	return base64.StdEncoding.EncodeToString([]byte(f.Content)), nil
}

func quantities(l corev1.ResourceList) map[string]string {
	if len(l) == 0 {
		return nil
	}
	m := make(map[string]string, len(l))
	for name, q := range l {
		m[string(name)] = q.String()
	}
	return m
}

func args(in []bootstrapv1.Arg) []nodeconfig.Arg {
	var out []nodeconfig.Arg
	for _, a := range in {
		// Flags travel without their dashes; a user may write either.
		out = append(out, nodeconfig.Arg{Name: strings.TrimLeft(a.Name, "-"), Value: deref(a.Value)})
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// unique concatenates lists, keeping the first of each value.
func unique(lists ...[]string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, l := range lists {
		for _, v := range l {
			if v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// ParseScript is Render's inverse, as a node sees its user data: it checks
// that script is the stub with one base64 literal in place of the
// placeholder and returns the node configuration JSON the literal holds.
func ParseScript(script []byte) ([]byte, error) {
	before, after, ok := strings.Cut(stub, placeholder)
	if !ok {
		return nil, errors.New("the stub has no placeholder")
	}
	s := string(script)
	if !strings.HasPrefix(s, before) || !strings.HasSuffix(s, after) || len(s) < len(before)+len(after) {
		return nil, errors.New("the user data is not capwin's bootstrap stub")
	}
	literal := s[len(before) : len(s)-len(after)]
	data, err := base64.StdEncoding.DecodeString(literal)
	if err != nil {
		return nil, fmt.Errorf("the stub's node configuration is not base64: %w", err)
	}
	return data, nil
}
