package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// The files the kubeadm bootstrap provider's cloud-config writes the
// kubeadm configuration to, for kubeadm init and kubeadm join.
const (
	kubeadmInitFile = "/run/kubeadm/kubeadm.yaml"
	kubeadmJoinFile = "/run/kubeadm/kubeadm-join-config.yaml"
)

// cloudConfig is what the simulated Linux guest reads of its cloud-config.
type cloudConfig struct {
	WriteFiles []struct {
		Path     string `json:"path"`
		Content  string `json:"content"`
		Encoding string `json:"encoding,omitempty"`
	} `json:"write_files"`
}

// kubeadmDoc is a kubeadm InitConfiguration or JoinConfiguration, as far
// as the kubelet's registration goes.
type kubeadmDoc struct {
	Kind             string `json:"kind"`
	NodeRegistration struct {
		Name             string          `json:"name"`
		KubeletExtraArgs json.RawMessage `json:"kubeletExtraArgs"`
		Taints           []corev1.Taint  `json:"taints"`
	} `json:"nodeRegistration"`
	ControlPlane *struct{} `json:"controlPlane"`
}

// jinjaHostname is how a kubeadm configuration names the node after the
// instance's host name, in cloud-init's Jinja templating.
var jinjaHostname = regexp.MustCompile(`\{\{\s*(local_hostname|ds\.meta_data\.local_hostname|v1\.local_hostname|ds\.meta_data\["local_hostname"\])\s*\}\}`)

// linuxKubelet reads a Linux machine's cloud-config as cloud-init and
// kubeadm would: the kubeadm configuration it writes gives the node's
// name, the kubelet's extra flags and its taints, and whether kubeadm
// makes it a control-plane node. kubeadm passes no --node-ip of its own.
func linuxKubelet(node *corev1.Node, userData []byte, hostname, ip string) (*kubelet, error) {
	jinja := bytes.HasPrefix(userData, []byte("## template: jinja"))
	cc := cloudConfig{}
	if err := yaml.Unmarshal(userData, &cc); err != nil {
		return nil, fmt.Errorf("cloud-config: %w", err)
	}
	var doc *kubeadmDoc
	for _, f := range cc.WriteFiles {
		if f.Path != kubeadmInitFile && f.Path != kubeadmJoinFile {
			continue
		}
		if f.Encoding != "" {
			return nil, fmt.Errorf("cloud-config: %s: the simulation reads plain files only, not %s", f.Path, f.Encoding)
		}
		content := f.Content
		if jinja {
			content = jinjaHostname.ReplaceAllString(content, hostname)
		}
		for _, part := range strings.Split(content, "\n---") {
			d := &kubeadmDoc{}
			if err := yaml.Unmarshal([]byte(part), d); err != nil {
				return nil, fmt.Errorf("cloud-config: %s: %w", f.Path, err)
			}
			if d.Kind == "InitConfiguration" || d.Kind == "JoinConfiguration" {
				doc = d
			}
		}
	}
	if doc == nil {
		return nil, fmt.Errorf("cloud-config writes no kubeadm InitConfiguration or JoinConfiguration (%s, %s)", kubeadmInitFile, kubeadmJoinFile)
	}
	nr := doc.NodeRegistration
	name := nr.Name
	if name == "" {
		name = strings.ToLower(hostname)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("kubeadm: node name %q: %s", name, strings.Join(errs, "; "))
	}
	node.Name, node.Labels[corev1.LabelHostname] = name, name
	node.Labels[corev1.LabelOSStable] = "linux"
	node.Spec.Taints = nr.Taints
	node.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"}
	argv, err := kubeadmArgs(nr.KubeletExtraArgs)
	if err != nil {
		return nil, err
	}
	k := &kubelet{
		node: node, hostIP: ip, flags: kubeletFlags(append([]string{"--hostname-override=" + name}, argv...)),
		controlPlane: doc.Kind == "InitConfiguration" || doc.ControlPlane != nil,
	}
	if err := k.check(); err != nil {
		return nil, err
	}
	return k, nil
}

// kubeadmArgs reads kubeletExtraArgs, a list of name and value in
// kubeadm.k8s.io/v1beta4 and a map in v1beta3, as flags.
func kubeadmArgs(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct{ Name, Value string }
	if err := json.Unmarshal(raw, &list); err == nil {
		argv := make([]string, 0, len(list))
		for _, a := range list {
			argv = append(argv, "--"+a.Name+"="+a.Value)
		}
		return argv, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New("kubeadm: kubeletExtraArgs is neither a list of name and value nor a map")
	}
	argv := make([]string, 0, len(m))
	for k, v := range m {
		argv = append(argv, "--"+k+"="+v)
	}
	return argv, nil
}
