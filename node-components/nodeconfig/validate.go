package nodeconfig

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxComputerName is the longest Windows computer name.
const MaxComputerName = 15

var (
	tokenPattern       = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)
	caHashPattern      = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	nodeNamePattern    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	versionPattern     = regexp.MustCompile(`^v\d+\.\d+\.\d+([-+].*)?$`)
	buildPattern       = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	windowsPathPattern = regexp.MustCompile(`^[A-Za-z]:\\`)
	quantityPattern    = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)
	dnsSubdomain       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// MaxProgressConfigMap is the longest join.progressConfigMap: the token
// group named after it (discovery.ProgressGroup, the prefix
// "system:bootstrappers:capwin:" and the name) must stay within the
// bootstrap token's extra-group rule,
// ^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$, which leaves 256
// characters after "system:bootstrappers:", 7 of them "capwin:". That
// would allow 249; the limit agreed with the bootstrap provider, which
// refuses longer Machine names, is 248, one to spare.
const MaxProgressConfigMap = 248

// ProgressConfigMapRule is the rule join.progressConfigMap follows.
var ProgressConfigMapRule = fmt.Sprintf("a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit) of at most %d characters, so that its bootstrap token group fits the rule for a token's extra groups", MaxProgressConfigMap)

// CheckProgressConfigMap checks a join.progressConfigMap that is set
// against ProgressConfigMapRule.
func CheckProgressConfigMap(name string) error {
	if len(name) > MaxProgressConfigMap || !dnsSubdomain.MatchString(name) {
		return fmt.Errorf("%q must be %s", name, ProgressConfigMapRule)
	}
	return nil
}

// NodeNameRule is the rule a node name follows: it is a Windows computer
// name, lower case, that is also a valid Kubernetes node name.
var NodeNameRule = fmt.Sprintf("1 to %d lower-case letters, digits and inner hyphens (a Windows computer name)", MaxComputerName)

// CheckNodeName checks name against NodeNameRule: the configuration's
// nodeName, or the computer name the node takes when nodeName is empty.
func CheckNodeName(name string) error {
	if len(name) > MaxComputerName || !nodeNamePattern.MatchString(name) {
		return fmt.Errorf("%q must be %s", name, NodeNameRule)
	}
	return nil
}

// Decode reads one configuration strictly: unknown fields and trailing data
// are errors, so a typo never silently means a default.
func Decode(r io.Reader) (*Config, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	c := &Config{}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("decoding the node configuration: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decoding the node configuration: data after the JSON object")
	}
	return c, nil
}

// Parse decodes and validates a configuration.
func Parse(data []byte) (*Config, error) {
	c, err := Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// FieldError is one rule a field breaks.
type FieldError struct {
	Field string
	Rule  string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Rule }

// Errors are all the rules a configuration breaks.
type Errors []FieldError

func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, fe := range e {
		parts[i] = fe.Error()
	}
	return "invalid node configuration: " + strings.Join(parts, "; ")
}

type checker struct{ errs Errors }

func (c *checker) add(field, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
}

func (c *checker) cidr(field, value string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(value)
	if err != nil {
		c.add(field, "%q is not a CIDR", value)
		return p, false
	}
	return p, true
}

// Validate checks the configuration the way the node does before it changes
// anything. It returns Errors naming every field at fault.
func (cfg *Config) Validate() error {
	c := &checker{}
	if cfg.SchemaVersion != SchemaVersion {
		c.add("schemaVersion", "is %q; this agent reads %q", cfg.SchemaVersion, SchemaVersion)
	}
	if cfg.NodeName != "" {
		if err := CheckNodeName(cfg.NodeName); err != nil {
			c.add("nodeName", "%v", err)
		}
	}
	if !versionPattern.MatchString(cfg.KubernetesVersion) {
		c.add("kubernetesVersion", "%q must look like v1.36.3", cfg.KubernetesVersion)
	}
	if cfg.WindowsBuild != "" && !buildPattern.MatchString(cfg.WindowsBuild) {
		c.add("windowsBuild", "%q must look like 10.0.20348", cfg.WindowsBuild)
	}
	cfg.validateJoin(c)
	for i, t := range cfg.Taints {
		f := fmt.Sprintf("taints[%d]", i)
		if t.Key == "" {
			c.add(f+".key", "is required")
		}
		switch t.Effect {
		case "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			c.add(f+".effect", "%q must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
		}
	}
	for k := range cfg.Labels {
		if k == "" {
			c.add("labels", "a label key is empty")
		}
	}
	for _, r := range []struct {
		field string
		m     map[string]string
	}{{"kubelet.systemReserved", cfg.Kubelet.SystemReserved}, {"kubelet.kubeReserved", cfg.Kubelet.KubeReserved}} {
		for name, q := range r.m {
			if !quantityPattern.MatchString(q) {
				c.add(r.field+"."+name, "%q is not a quantity such as 512Mi", q)
			}
		}
	}
	switch cfg.Containerd.Isolation {
	case "Process", "HyperV":
	default:
		c.add("containerd.isolation", "%q must be Process or HyperV", cfg.Containerd.Isolation)
	}
	for i, m := range cfg.Containerd.RegistryMirrors {
		for j, e := range m.Endpoints {
			if u, err := url.Parse(e); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
				c.add(fmt.Sprintf("containerd.registryMirrors[%d].endpoints[%d]", i, j), "%q must be an http(s) URL", RedactURL(e))
			}
		}
	}
	cfg.validateNetwork(c)
	if p := cfg.Proxy; p != nil {
		for _, kv := range [][2]string{{"proxy.httpProxy", p.HTTPProxy}, {"proxy.httpsProxy", p.HTTPSProxy}} {
			field, v := kv[0], kv[1]
			if v == "" {
				continue
			}
			if u, err := url.Parse(v); err != nil || u.Host == "" {
				c.add(field, "%q must be a URL", RedactURL(v))
			}
		}
	}
	seen := map[string]bool{}
	for i, f := range cfg.Files {
		field := fmt.Sprintf("files[%d]", i)
		if !windowsPathPattern.MatchString(f.Path) || strings.Contains(f.Path, `..`) {
			c.add(field+".path", "%q must be an absolute Windows path without ..", f.Path)
		}
		if seen[strings.ToLower(f.Path)] {
			c.add(field+".path", "%q is written twice", f.Path)
		}
		seen[strings.ToLower(f.Path)] = true
		if _, err := base64.StdEncoding.DecodeString(f.Content); err != nil {
			c.add(field+".content", "is not base64: %v", err)
		}
	}
	if len(c.errs) > 0 {
		return c.errs
	}
	return nil
}

func (cfg *Config) validateJoin(c *checker) {
	host, port, err := net.SplitHostPort(cfg.Join.APIServerEndpoint)
	if err != nil || host == "" {
		c.add("join.apiServerEndpoint", "%q must be host:port", cfg.Join.APIServerEndpoint)
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		c.add("join.apiServerEndpoint", "port %q must be 1 to 65535", port)
	}
	if !tokenPattern.MatchString(cfg.Join.Token) {
		// Never echo the token itself.
		c.add("join.token", "must be a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	if len(cfg.Join.CACertHashes) == 0 {
		c.add("join.caCertHashes", "at least one CA hash is required: the node does not join an unpinned control plane")
	}
	for i, h := range cfg.Join.CACertHashes {
		if !caHashPattern.MatchString(h) {
			c.add(fmt.Sprintf("join.caCertHashes[%d]", i), "%q must be sha256: and 64 lower-case hex digits", h)
		}
	}
	if n := cfg.Join.ProgressConfigMap; n != "" {
		if err := CheckProgressConfigMap(n); err != nil {
			c.add("join.progressConfigMap", "%v", err)
		}
	}
}

// CNIs are the values of network.cni: each has a driver in capwin-node
// (node-components/cni) and a value in WindowsKubeadmConfig's
// spec.network.cni.
var CNIs = []string{"flannel", "calico"}

func (cfg *Config) validateNetwork(c *checker) {
	n := cfg.Network
	if !slices.Contains(CNIs, n.CNI) {
		c.add("network.cni", "%q must be one of %s", n.CNI, strings.Join(CNIs, ", "))
	}
	switch n.Mode {
	case "overlay":
		if n.VXLANVNI != 4096 {
			c.add("network.vxlanVNI", "is %d; Windows overlay networking accepts only 4096", n.VXLANVNI)
		}
		if n.VXLANPort != 4789 {
			c.add("network.vxlanPort", "is %d; Windows overlay networking accepts only 4789", n.VXLANPort)
		}
	case "l2bridge":
		if n.VXLANVNI != 0 || n.VXLANPort != 0 {
			c.add("network.vxlanVNI", "VXLAN settings apply to overlay mode only")
		}
	default:
		c.add("network.mode", "%q must be overlay or l2bridge", n.Mode)
	}
	if len(n.PodCIDRs) == 0 {
		c.add("network.podCIDRs", "at least one pod CIDR is required")
	}
	if len(n.ServiceCIDRs) == 0 {
		c.add("network.serviceCIDRs", "at least one service CIDR is required")
	}
	all := map[string][]string{
		"network.podCIDRs":              n.PodCIDRs,
		"network.serviceCIDRs":          n.ServiceCIDRs,
		"network.outboundNATExceptions": n.OutboundNATExceptions,
	}
	if n.NodeSubnet != "" {
		all["network.nodeSubnet"] = []string{n.NodeSubnet}
	}
	for _, field := range []string{"network.podCIDRs", "network.serviceCIDRs", "network.nodeSubnet", "network.outboundNATExceptions"} {
		for i, v := range all[field] {
			f := field
			if field != "network.nodeSubnet" {
				f = fmt.Sprintf("%s[%d]", field, i)
			}
			if p, ok := c.cidr(f, v); ok && n.Mode == "overlay" && p.Addr().Is6() {
				c.add(f, "%q is IPv6; Windows overlay networking is IPv4 only", v)
			}
		}
	}
	// Pod-to-pod and pod-to-service traffic must not be NATed.
	exceptions := map[string]bool{}
	for _, e := range n.OutboundNATExceptions {
		exceptions[e] = true
	}
	for _, need := range append(append([]string{}, n.PodCIDRs...), n.ServiceCIDRs...) {
		if !exceptions[need] {
			c.add("network.outboundNATExceptions", "must include %s: pod and service traffic is never NATed", need)
		}
	}
}
