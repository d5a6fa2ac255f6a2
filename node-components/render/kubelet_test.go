package render

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	gold "github.com/capwin/capwin/node-components/internal/golden"
	"github.com/capwin/capwin/node-components/layout"
)

func parseYAML(t *testing.T, data []byte) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("the YAML does not parse: %v\n%s", err, data)
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(j)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The overrides were checked against sig-windows-tools
// hostprocess/PrepareNode.ps1 (--cgroups-per-qos=false,
// --enforce-node-allocatable="", --resolv-conf="" for containerd nodes), the
// Windows kubelet's validation (pkg/kubelet/apis/config/validation) and its
// eviction defaults (pkg/kubelet/eviction/defaults_windows.go).
func TestKubeletConfigGoldenAgainstPrepareNode(t *testing.T) {
	out, err := KubeletConfig(gold.Read(t, "kubelet-config.cluster.yaml"), newNode().obj())
	if err != nil {
		t.Fatal(err)
	}
	gold.Compare(t, "kubelet-config.yaml", out)
}

func TestKubeletConfigFacts(t *testing.T) {
	cfg := newNode().obj()
	m := parseYAML(t, must(KubeletConfig(gold.Read(t, "kubelet-config.cluster.yaml"), cfg)))

	for field, want := range map[string]any{
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"kind":                     "KubeletConfiguration",
		"cgroupsPerQOS":            false,
		"resolvConf":               "",
		"containerRuntimeEndpoint": "npipe:////./pipe/containerd-containerd",
		"rotateCertificates":       true,
		// The cluster's own settings pass through.
		"clusterDomain":      "cluster.local",
		"serverTLSBootstrap": true,
		"healthzPort":        json.Number("10248"),
		"maxOpenFiles":       json.Number("1000000"),
	} {
		if got := m[field]; got != want {
			t.Errorf("%s = %#v, want %#v", field, got, want)
		}
	}
	if ena, ok := m["enforceNodeAllocatable"].([]any); !ok || len(ena) != 0 {
		t.Errorf("enforceNodeAllocatable = %#v, want an explicit empty list (absent means [pods])", m["enforceNodeAllocatable"])
	}
	for _, f := range []string{"cgroupDriver", "kubeReservedCgroup", "staticPodPath", "evictionHard", "imageServiceEndpoint"} {
		if v, ok := m[f]; ok {
			t.Errorf("%s = %v is still set", f, v)
		}
	}
	if dns, _ := m["clusterDNS"].([]any); len(dns) != 1 || dns[0] != "10.96.0.10" {
		t.Errorf("clusterDNS = %v", m["clusterDNS"])
	}
	if fg, _ := m["featureGates"].(map[string]any); fg["KubeletTracing"] != true {
		t.Errorf("featureGates = %v, want the cluster's", m["featureGates"])
	}
	// A string that looks like a number stays a string.
	logging, _ := m["logging"].(map[string]any)
	opts, _ := logging["options"].(map[string]any)
	text, _ := opts["text"].(map[string]any)
	if text["infoBufferSize"] != "0" {
		t.Errorf("logging.options.text.infoBufferSize = %#v, want the string \"0\"", text["infoBufferSize"])
	}
	for field, want := range map[string]map[string]string{"systemReserved": cfg.Kubelet.SystemReserved, "kubeReserved": cfg.Kubelet.KubeReserved} {
		got, _ := m[field].(map[string]any)
		if len(got) != len(want) {
			t.Errorf("%s = %v, want %v (the cluster's replaced)", field, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s.%s = %v, want %s", field, k, got[k], v)
			}
		}
	}
	authn, _ := m["authentication"].(map[string]any)
	x509, _ := authn["x509"].(map[string]any)
	if x509["clientCAFile"] != layout.CACert {
		t.Errorf("clientCAFile = %v, want %s", x509["clientCAFile"], layout.CACert)
	}
	if wh, _ := authn["webhook"].(map[string]any); wh["enabled"] != true {
		t.Error("the cluster's webhook authentication was lost")
	}
	taints, _ := m["registerWithTaints"].([]any)
	if len(taints) != 1 {
		t.Fatalf("registerWithTaints = %v", m["registerWithTaints"])
	}
	if tt, _ := taints[0].(map[string]any); tt["key"] != "os" || tt["value"] != "windows" || tt["effect"] != "NoSchedule" {
		t.Errorf("taint = %v", tt)
	}
}

func TestKubeletConfigEdges(t *testing.T) {
	// An empty cluster configuration still yields a complete document.
	m := parseYAML(t, must(KubeletConfig(nil, newNode().obj())))
	if m["kind"] != "KubeletConfiguration" || m["cgroupsPerQOS"] != false {
		t.Errorf("from nothing: %v", m)
	}
	// No reservations or taints in the node configuration: the cluster's go.
	cfg := newNode().obj()
	cfg.Kubelet.SystemReserved, cfg.Kubelet.KubeReserved, cfg.Taints = nil, nil, nil
	m = parseYAML(t, must(KubeletConfig([]byte("systemReserved: {memory: 1Gi}\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n"), cfg)))
	for _, f := range []string{"systemReserved", "kubeReserved", "registerWithTaints"} {
		if _, ok := m[f]; ok {
			t.Errorf("%s = %v survived", f, m[f])
		}
	}
	for name, in := range map[string]string{
		"another kind":         "kind: KubeProxyConfiguration\n",
		"another version":      "apiVersion: kubelet.config.k8s.io/v1\n",
		"a list":               "- a\n",
		"authentication value": "authentication: yes\n",
		"x509 value":           "authentication: {x509: 3}\n",
		"not YAML":             "a: [\n",
	} {
		if _, err := KubeletConfig([]byte(in), newNode().obj()); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

// Checked against what kubeadm writes as bootstrap-kubelet.conf
// (cmd/kubeadm/app/util/kubeconfig CreateWithToken with discovery's
// TokenUser and the default cluster name).
func TestBootstrapKubeconfigGoldenAgainstKubeadm(t *testing.T) {
	f, err := BootstrapKubeconfig("10.0.0.100:6443", testCAPEM, "abcdef.0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != layout.BootstrapKubeconfig || !f.Private {
		t.Errorf("file %s private=%v, want %s private", f.Path, f.Private, layout.BootstrapKubeconfig)
	}
	gold.Compare(t, "bootstrap-kubelet.conf", f.Data)

	c, err := clientcmd.Load(f.Data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := c.Contexts[c.CurrentContext]
	if ctx == nil || c.CurrentContext != "tls-bootstrap-token-user@kubernetes" {
		t.Fatalf("current context %q", c.CurrentContext)
	}
	if cl := c.Clusters[ctx.Cluster]; cl == nil || cl.Server != "https://10.0.0.100:6443" || string(cl.CertificateAuthorityData) != string(testCAPEM) {
		t.Errorf("cluster = %+v", cl)
	}
	if u := c.AuthInfos[ctx.AuthInfo]; u == nil || u.Token != "abcdef.0123456789abcdef" {
		t.Errorf("user = %+v", u)
	}

	if f, err := BootstrapKubeconfig("https://api.example.com:6443", testCAPEM, "t"); err != nil || !strings.Contains(string(f.Data), "server: https://api.example.com:6443") {
		t.Errorf("an https URL is kept as it is: %v\n%s", err, f.Data)
	}
	for name, args := range map[string][3]string{
		"http":     {"http://10.0.0.100:6443", "ca", "t"},
		"no host":  {"https://", "ca", "t"},
		"no CA":    {"10.0.0.100:6443", "", "t"},
		"no token": {"10.0.0.100:6443", "ca", ""},
	} {
		if _, err := BootstrapKubeconfig(args[0], []byte(args[1]), args[2]); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}
