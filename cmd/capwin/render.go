package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/bootstrap/validation"
)

// Placeholders stand in for what only the running cluster knows.
const (
	placeholderToken  = "abcdef.0123456789abcdef"
	placeholderCAHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
)

const renderUsage = `usage: capwin render -f CONFIG.yaml [flags]

Shows the bootstrap data a Windows node would receive for a
WindowsKubeadmConfig (or the spec of a WindowsKubeadmConfigTemplate): the
PowerShell stub cloudbase-init runs, the node configuration it hands to
capwin-node, and their sizes. The bootstrap token is a placeholder; the CA
hash is one too unless --ca-cert is given.

flags:`

func render(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, renderUsage); fs.PrintDefaults() }
	file := fs.String("f", "", "the WindowsKubeadmConfig or WindowsKubeadmConfigTemplate YAML")
	clusterFile := fs.String("cluster", "", "a Cluster YAML to take the pod and service CIDRs and the control-plane endpoint from")
	podCIDR := fs.String("pod-cidr", "10.244.0.0/16", "the cluster's pod CIDR (without --cluster)")
	serviceCIDR := fs.String("service-cidr", "10.96.0.0/12", "the cluster's service CIDR (without --cluster)")
	endpoint := fs.String("endpoint", "10.0.0.100:6443", "the control-plane endpoint host:port (without --cluster)")
	version := fs.String("kubernetes-version", "v1.36.3", "the Machine's Kubernetes version")
	release := fs.String("windows-release", "", "a Windows Server release (ltsc2019, ltsc2022, ltsc2025) whose build the node must run; empty, as the controller renders it: the node does not check")
	nodeName := fs.String("node-name", "", "a node name; empty, as the controller renders it: the node takes its computer name")
	caCert := fs.String("ca-cert", "", "the cluster CA certificate (PEM) to compute the real CA hash from")
	output := fs.String("o", "all", "what to print: all, script or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" {
		fs.Usage()
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "capwin render: "+format+"\n", a...)
		return 1
	}

	spec, err := readConfig(*file)
	if err != nil {
		return fail("%v", err)
	}
	spec.Default()
	if errs := validation.ValidateConfigSpec(spec, field.NewPath("spec")); len(errs) > 0 {
		fmt.Fprintf(stderr, "capwin render: %s is invalid; admission would refuse it:\n", *file)
		for _, e := range errs {
			fmt.Fprintf(stderr, "  %s\n", e.Error())
		}
		return 1
	}

	in := payload.Input{
		Spec:              spec,
		NodeName:          *nodeName,
		KubernetesVersion: *version,
		Token:             placeholderToken,
		CACertHashes:      []string{placeholderCAHash},
		PodCIDRs:          []string{*podCIDR},
		ServiceCIDRs:      []string{*serviceCIDR},
	}
	if *release != "" {
		build, ok := infrav1.WindowsRelease(*release).Build()
		if !ok {
			return fail("--windows-release %q is not one of %v", *release, infrav1.WindowsReleases())
		}
		in.WindowsBuild = build
	}
	host, port, err := splitEndpoint(*endpoint)
	if err != nil {
		return fail("--endpoint: %v", err)
	}
	in.ControlPlaneHost, in.ControlPlanePort = host, port
	if *clusterFile != "" {
		if err := fromCluster(*clusterFile, &in); err != nil {
			return fail("%v", err)
		}
	}
	if *caCert != "" {
		h, err := caHashFromFile(*caCert)
		if err != nil {
			return fail("%v", err)
		}
		in.CACertHashes = []string{h}
	}

	p, err := payload.Render(in)
	if err != nil {
		return fail("rendering: %v", err)
	}
	enc, err := p.GzipBase64()
	if err != nil {
		return fail("encoding: %v", err)
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, p.JSON, "", "  ")

	switch *output {
	case "script":
		_, _ = stdout.Write(p.Script)
	case "json":
		fmt.Fprintln(stdout, pretty.String())
	case "all":
		fmt.Fprintf(stdout, "# --- bootstrap script (user data, %d bytes) ---\n", len(p.Script))
		_, _ = stdout.Write(p.Script)
		fmt.Fprintf(stdout, "\n# --- node configuration (%s, %d bytes) ---\n", p.Config.SchemaVersion, len(p.JSON))
		fmt.Fprintln(stdout, pretty.String())
		fmt.Fprintln(stdout, "\n# --- sizes ---")
		fmt.Fprintf(stdout, "raw (Azure customData):              %6d bytes\n", len(p.Script))
		fmt.Fprintf(stdout, "gzip+base64 (vSphere guestinfo):     %6d bytes\n", len(enc))
		fmt.Fprintf(stdout, "limit:                               %6d bytes\n", payload.MaxSize)
		fmt.Fprintf(stdout, "\n%s; token and CA hash: %s\n", nodeNote(in), placeholderNote(*caCert != ""))
	default:
		return fail("-o %q: use all, script or json", *output)
	}
	if err := p.CheckSize(); err != nil {
		return fail("%v", err)
	}
	return 0
}

// nodeNote says how the node will be named and which build it will accept.
func nodeNote(in payload.Input) string {
	name := "node named after its computer name"
	if in.NodeName != "" {
		name = "node " + in.NodeName
	}
	if in.WindowsBuild == "" {
		return name + ", any Windows build"
	}
	return name + ", Windows build " + in.WindowsBuild + " only"
}

func placeholderNote(realCA bool) string {
	if realCA {
		return "the token is a placeholder; the CA hash is the real one"
	}
	return "placeholders (the controller fills in the real ones)"
}

// readConfig reads the spec of a WindowsKubeadmConfig or a
// WindowsKubeadmConfigTemplate.
func readConfig(path string) (*bootstrapv1.WindowsKubeadmConfigSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch head.Kind {
	case "WindowsKubeadmConfig":
		c := &bootstrapv1.WindowsKubeadmConfig{}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &c.Spec, nil
	case "WindowsKubeadmConfigTemplate":
		t := &bootstrapv1.WindowsKubeadmConfigTemplate{}
		if err := yaml.UnmarshalStrict(data, t); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &t.Spec.Template.Spec, nil
	}
	return nil, fmt.Errorf("%s: kind %q is not WindowsKubeadmConfig or WindowsKubeadmConfigTemplate", path, head.Kind)
}

func fromCluster(path string, in *payload.Input) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	c := &clusterv1.Cluster{}
	if err := yaml.Unmarshal(data, c); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if c.Kind != "Cluster" {
		return fmt.Errorf("%s: kind %q is not Cluster", path, c.Kind)
	}
	if b := c.Spec.ClusterNetwork.Pods.CIDRBlocks; len(b) > 0 {
		in.PodCIDRs = b
	}
	if b := c.Spec.ClusterNetwork.Services.CIDRBlocks; len(b) > 0 {
		in.ServiceCIDRs = b
	}
	if ep := c.Spec.ControlPlaneEndpoint; ep.Host != "" {
		in.ControlPlaneHost, in.ControlPlanePort = ep.Host, ep.Port
	}
	return nil
}

func splitEndpoint(s string) (string, int32, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("port %q must be 1 to 65535", port)
	}
	return host, int32(n), nil
}

func caHashFromFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return payload.CACertHash(data)
}
