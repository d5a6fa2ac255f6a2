package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

const (
	kubeletConfigAPIVersion = "kubelet.config.k8s.io/v1beta1"
	kubeletConfigKind       = "KubeletConfiguration"
)

// linuxOnlyKubeletFields are removed from the cluster's configuration: they
// describe Linux nodes and either mean nothing on Windows or stop the
// kubelet there.
var linuxOnlyKubeletFields = []string{
	// Windows has no cgroups; the kubelet's container manager on Windows
	// uses none of these.
	"cgroupDriver",
	"cgroupRoot",
	"kubeletCgroups",
	"systemCgroups",
	"systemReservedCgroup",
	"kubeReservedCgroup",
	// The Windows kubelet refuses to start with these
	// (pkg/kubelet/apis/config/validation/validation_windows.go).
	"singleProcessOOMKill",
	"userNamespaces",
	// The kubelet does evict on Windows (memory.available, nodefs,
	// imagefs), but with thresholds of its own when evictionHard is unset
	// (pkg/kubelet/eviction/defaults_windows.go: 500Mi of memory, where
	// Linux uses 100Mi; applied in cmd/kubelet/app/server.go). The
	// cluster's thresholds are tuned for its Linux nodes, so all of them
	// go and the Windows defaults apply.
	"evictionHard",
	"evictionSoft",
	"evictionSoftGracePeriod",
	"evictionMinimumReclaim",
	// kubeadm's /etc/kubernetes/manifests would become
	// C:\etc\kubernetes\manifests, a directory capwin neither creates nor
	// protects; a Windows worker runs no static pods, so no file on disk
	// should be able to become one.
	"staticPodPath",
	// The image service is containerd's pipe too; a Linux socket here
	// would break image pulls.
	"imageServiceEndpoint",
}

// KubeletConfig takes the cluster's KubeletConfiguration (the "kubelet" key
// of kube-system/kubelet-config, as kubeadm reads it) and applies what a
// Windows node needs. The document is handled as a map, so fields this
// package does not know (newer kubelets, feature-gated ones) pass through
// unchanged; numbers keep their exact text.
//
// The overrides, and why:
//   - cgroupsPerQOS false and enforceNodeAllocatable []: Windows has no
//     cgroups. With the defaults (true, [pods]) the kubelet only warns, but
//     with cgroupsPerQOS false an enforcement of "pods" is a validation
//     error (validation.go), so both are set; an explicit empty list stays
//     empty where an absent one defaults to [pods]. This is what
//     sig-windows-tools' PrepareNode.ps1 passes as flags.
//   - resolvConf "": there is no /etc/resolv.conf; pods get DNS through
//     the CRI (PrepareNode.ps1 sets --resolv-conf="").
//   - containerRuntimeEndpoint: containerd's named pipe.
//   - systemReserved and kubeReserved: the node configuration's, replacing
//     the cluster's. Windows has no OOM killer, so reserving memory for
//     the system is what keeps the node alive (Kubernetes' "Resource
//     management for Windows nodes").
//   - registerWithTaints: the node configuration's taints, replacing any
//     meant for the cluster's Linux nodes.
//   - authentication.x509.clientCAFile: the CA the agent writes.
//   - rotateCertificates true: the node renews its client certificate.
//   - the fields in linuxOnlyKubeletFields are removed.
func KubeletConfig(cluster []byte, cfg *nodeconfig.Config) ([]byte, error) {
	var values []string
	for _, m := range []map[string]string{cfg.Kubelet.SystemReserved, cfg.Kubelet.KubeReserved} {
		for k, v := range m {
			values = append(values, k, v)
		}
	}
	for _, t := range cfg.Taints {
		values = append(values, t.Key, t.Value, t.Effect)
	}
	if err := checkUTF8("rendering the kubelet configuration", values...); err != nil {
		return nil, err
	}
	doc := map[string]any{}
	if len(bytes.TrimSpace(cluster)) > 0 {
		j, err := yaml.YAMLToJSON(cluster)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's kubelet configuration: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		// Numbers stay json.Number: as float64 a value such as 1000000
		// would come back as 1e+06, which the kubelet cannot read into an
		// integer field.
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("reading the cluster's kubelet configuration: %w", err)
		}
		switch m := v.(type) {
		case nil:
		case map[string]any:
			doc = m
		default:
			return nil, errors.New("reading the cluster's kubelet configuration: it is not a YAML mapping")
		}
	}
	for _, kv := range [][2]string{{"apiVersion", kubeletConfigAPIVersion}, {"kind", kubeletConfigKind}} {
		field, want := kv[0], kv[1]
		switch got := doc[field].(type) {
		case nil:
			doc[field] = want
		case string:
			if got != want {
				return nil, fmt.Errorf("reading the cluster's kubelet configuration: %s is %q, not %q", field, got, want)
			}
		default:
			return nil, fmt.Errorf("reading the cluster's kubelet configuration: %s is not a string", field)
		}
	}

	for _, f := range linuxOnlyKubeletFields {
		delete(doc, f)
	}
	doc["cgroupsPerQOS"] = false
	doc["enforceNodeAllocatable"] = []any{}
	doc["resolvConf"] = ""
	doc["containerRuntimeEndpoint"] = ContainerRuntimeEndpoint
	doc["rotateCertificates"] = true
	setOrDelete(doc, "systemReserved", quantities(cfg.Kubelet.SystemReserved))
	setOrDelete(doc, "kubeReserved", quantities(cfg.Kubelet.KubeReserved))
	if len(cfg.Taints) > 0 {
		taints := make([]any, 0, len(cfg.Taints))
		for _, t := range cfg.Taints {
			m := map[string]any{"key": t.Key, "effect": t.Effect}
			if t.Value != "" {
				m["value"] = t.Value
			}
			taints = append(taints, m)
		}
		doc["registerWithTaints"] = taints
	} else {
		delete(doc, "registerWithTaints")
	}

	authn, err := subMap(doc, "authentication")
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's kubelet configuration: %w", err)
	}
	x509, err := subMap(authn, "x509")
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's kubelet configuration: authentication.%w", err)
	}
	x509["clientCAFile"] = layout.CACert

	j, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("rendering the kubelet configuration: %w", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("rendering the kubelet configuration: %w", err)
	}
	return y, nil
}

// subMap returns doc[key] as a map, creating it when absent.
func subMap(doc map[string]any, key string) (map[string]any, error) {
	switch v := doc[key].(type) {
	case nil:
		m := map[string]any{}
		doc[key] = m
		return m, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("%s is not a mapping", key)
	}
}

func quantities(m map[string]string) map[string]any {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func setOrDelete(doc map[string]any, key string, v map[string]any) {
	if v == nil {
		delete(doc, key)
		return
	}
	doc[key] = v
}

// The names kubeadm gives the bootstrap kubeconfig's parts
// (cmd/kubeadm/app/discovery/discovery.go: TokenUser and the default
// cluster name; kubeconfig.CreateBasic names the context user@cluster).
const (
	bootstrapCluster = "kubernetes"
	bootstrapUser    = "tls-bootstrap-token-user"
)

// APIServerURL is the https URL of an API server given as host:port (the
// node configuration's join.apiServerEndpoint) or already as a URL.
func APIServerURL(endpoint string) (string, error) {
	s := endpoint
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("the API server %q is not host:port or an https URL", endpoint)
	}
	return s, nil
}

// BootstrapKubeconfig is the kubelet's bootstrap kubeconfig, as kubeadm
// writes bootstrap-kubelet.conf: one cluster with the server and its CA,
// one user with the bootstrap token, one context joining them. It holds a
// credential, so it is private.
func BootstrapKubeconfig(server string, caPEM []byte, token string) (File, error) {
	u, err := APIServerURL(server)
	if err != nil {
		return File{}, fmt.Errorf("rendering the bootstrap kubeconfig: %w", err)
	}
	if len(caPEM) == 0 {
		return File{}, errors.New("rendering the bootstrap kubeconfig: no cluster CA")
	}
	if token == "" {
		return File{}, errors.New("rendering the bootstrap kubeconfig: no bootstrap token")
	}
	if err := checkUTF8("rendering the bootstrap kubeconfig: the token", token); err != nil {
		return File{}, err
	}
	context := bootstrapUser + "@" + bootstrapCluster
	c := clientcmdapi.NewConfig()
	c.Clusters[bootstrapCluster] = &clientcmdapi.Cluster{Server: u, CertificateAuthorityData: caPEM}
	c.AuthInfos[bootstrapUser] = &clientcmdapi.AuthInfo{Token: token}
	c.Contexts[context] = &clientcmdapi.Context{Cluster: bootstrapCluster, AuthInfo: bootstrapUser}
	c.CurrentContext = context
	data, err := clientcmd.Write(*c)
	if err != nil {
		return File{}, fmt.Errorf("rendering the bootstrap kubeconfig: %w", err)
	}
	return File{Path: layout.BootstrapKubeconfig, Data: data, Private: true}, nil
}
