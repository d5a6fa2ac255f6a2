package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/nodeconfig/nodeconfigtest"
)

const testToken = "abcdef.0123456789abcdef"

// testCA is a CA certificate the fake control plane "proves".
const testCA = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAVMRMwEQYDVQQDEwprdWJlcm5ldGVz\n-----END CERTIFICATE-----\n"

// testKubeletConfig is what kubeadm puts in kube-system/kubelet-config.
const testKubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
rotateCertificates: true
staticPodPath: /etc/kubernetes/manifests
`

// fakeControlPlane stands for the cluster behind the agent's ControlPlane
// seam; discovery and the Node wait are tested against a real API server in
// the main module (test/nodeagent).
type fakeControlPlane struct {
	mu         sync.Mutex
	discoverFn func() error
	registered map[string]bool
	discovers  int
}

func (f *fakeControlPlane) Discover(_ context.Context, join nodeconfig.Join) (*Discovered, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.discovers++
	if f.discoverFn != nil {
		if err := f.discoverFn(); err != nil {
			return nil, err
		}
	}
	if join.Token != testToken {
		return nil, errors.New("the token is not the cluster's")
	}
	return &Discovered{Server: "https://10.0.0.100:6443", CACert: []byte(testCA), KubeletConfig: []byte(testKubeletConfig)}, nil
}

func (f *fakeControlPlane) WaitForNode(ctx context.Context, kubeconfig []byte, _ func(string) ([]byte, error), nodeName string) error {
	f.mu.Lock()
	ok := f.registered[nodeName]
	f.mu.Unlock()
	if !ok {
		<-ctx.Done()
		return ctx.Err()
	}
	if !strings.Contains(string(kubeconfig), "kubelet-client-current.pem") {
		return errors.New("kubelet.conf does not use the kubelet's client certificate")
	}
	return nil
}

func (f *fakeControlPlane) register(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.registered == nil {
		f.registered = map[string]bool{}
	}
	f.registered[name] = true
}

// node is a simulated Windows machine with the bundle installed, the
// stub's node configuration in place and a kubelet and flanneld that act
// as the real ones would once their Node exists.
type node struct {
	t     testing.TB
	host  *sim.Host
	cp    *fakeControlPlane
	cfg   *nodeconfig.Config
	log   strings.Builder
	mu    sync.Mutex
	shell []string
}

func newNode(t testing.TB, mutate ...func(*nodeconfig.Config)) *node {
	t.Helper()
	n := &node{t: t, host: sim.New(sim.Options{Root: t.TempDir(), ComputerName: "WIN1-MD-Q3ZK5A"}), cp: &fakeControlPlane{}}
	n.cfg = validConfig()
	for _, m := range mutate {
		m(n.cfg)
	}
	n.writeConfig()
	bundleDir := writeBundle(t, n.cfg.KubernetesVersion)
	if err := n.agent().Install(context.Background(), InstallOptions{Bundle: bundleDir}); err != nil {
		t.Fatalf("install: %v", err)
	}
	n.host.SetShell(func(script string) ([]byte, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.shell = append(n.shell, script)
		return []byte("ok\n"), nil
	})
	n.host.OnStart(layout.ServiceKubelet, func(_ context.Context, h *sim.Host, spec host.ServiceSpec) error {
		// The kubelet's TLS bootstrap: with the bootstrap kubeconfig it gets a
		// client certificate and writes its own kubeconfig; the Node follows.
		if ok, _ := h.FS().Exists(layout.KubeletKubeconfig); !ok {
			if ok, _ := h.FS().Exists(layout.BootstrapKubeconfig); !ok {
				return errors.New("kubelet: no kubeconfig and no bootstrap kubeconfig")
			}
			kc := "apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user:\n    client-certificate: " + layout.KubeletClientCert + "\n    client-key: " + layout.KubeletClientCert + "\n"
			if err := h.FS().WriteFile(layout.KubeletKubeconfig, []byte(kc), true); err != nil {
				return err
			}
		}
		// It registers under the name its flags give it, as the real one.
		for _, a := range spec.Command {
			if name, ok := strings.CutPrefix(a, "--hostname-override="); ok {
				n.cp.register(name)
				return nil
			}
		}
		return errors.New("kubelet: no --hostname-override")
	})
	n.host.OnStart(layout.ServiceFlanneld, sim.Flanneld("10.244.1.0/24"))
	return n
}

func (n *node) writeConfig() {
	data, err := json.Marshal(n.cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.host.FS().WriteFile(layout.NodeConfig, data, true); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) agent() *Agent {
	return &Agent{Host: n.host, ControlPlane: n.cp, Log: &n.log, NodeTimeout: 2e9, PollInterval: 1e6}
}

func (n *node) join() error { return n.agent().Join(context.Background(), layout.NodeConfig) }

// stopAfter is an agent that stops as a crash would after phase's work,
// before the phase is recorded.
func (n *node) stopAfter(phase string) *Agent {
	a := n.agent()
	a.afterPhase = func(p string) error {
		if p == phase {
			return errKilled
		}
		return nil
	}
	return a
}

func (n *node) shellScripts() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.shell...)
}

// validConfig is the common worker with a join token of this package's,
// files and commands.
func validConfig() *nodeconfig.Config {
	c := nodeconfigtest.Worker()
	c.Join.Token = testToken
	c.PreJoinCommands = []string{"Write-Output pre-1", "Write-Output pre-2"}
	c.PostJoinCommands = []string{"Write-Output post-1"}
	c.Files = []nodeconfig.File{{Path: `C:\etc\capwin\extra.txt`, Content: "aGVsbG8="}}
	return c
}

// writeBundle writes a bundle of stand-in binaries, as make bundle lays it out.
func writeBundle(t testing.TB, version string) string {
	t.Helper()
	dir := t.TempDir()
	if err := sim.WriteStandInBundle(dir, version); err != nil {
		t.Fatal(err)
	}
	return dir
}
