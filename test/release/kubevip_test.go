package release_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	kubeVIPManifest = "/etc/kubernetes/manifests/kube-vip.yaml"
	// kubeVIPKubeconfig is where kube-vip v0.9 reads its kubeconfig from
	// (pkg/manager/manager.go: adminConfigPath).
	kubeVIPKubeconfig = "/etc/kubernetes/admin.conf"
	superAdminConf    = "/etc/kubernetes/super-admin.conf"
	// The files Cluster API's cloud-config writes the kubeadm
	// configuration to, for kubeadm init and for kubeadm join
	// (bootstrap/kubeadm/pkg/cloudinit).
	kubeadmInitConfig = "/run/kubeadm/kubeadm.yaml"
	kubeadmJoinConfig = "/run/kubeadm/kubeadm-join-config.yaml"
)

// checkKubeVIP boots the flavor's control-plane nodes as far as kube-vip
// goes: it writes the kubeadm bootstrap's files and runs the
// preKubeadmCommands and postKubeadmCommands, as cloud-init does, under a
// temporary root with a kubeadm that reports its version, and reads the
// kube-vip static pod the kubelet would run during kubeadm init or join
// and after it. The first node's kube-vip must use super-admin.conf while
// kubeadm init (1.29 and later) runs and admin.conf afterwards; a joining
// node's keeps admin.conf throughout, its manifest untouched.
func checkKubeVIP(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	spec := controlPlaneConfigSpec(t, objs)
	for _, c := range []struct {
		name, kubeadmConfig, kubeadmVersion string
		during                              string
	}{
		{"init", kubeadmInitConfig, "v1.36.3", superAdminConf},
		{"join", kubeadmJoinConfig, "v1.36.3", kubeVIPKubeconfig},
		{"init before kubeadm 1.29", kubeadmInitConfig, "v1.28.15", kubeVIPKubeconfig},
	} {
		t.Run("kube-vip "+c.name, func(t *testing.T) {
			g := NewWithT(t)
			n := bootControlPlaneNode(t, spec, c.kubeadmConfig, c.kubeadmVersion)
			written := n.file(kubeVIPManifest)
			n.run(spec.pre)
			g.Expect(kubeVIPKubeconfigSource(t, n.file(kubeVIPManifest))).To(Equal(c.during), "kube-vip's kubeconfig while kubeadm runs")
			n.run(spec.post)
			after := n.file(kubeVIPManifest)
			g.Expect(kubeVIPKubeconfigSource(t, after)).To(Equal(kubeVIPKubeconfig), "kube-vip's kubeconfig once kubeadm has finished")
			if c.during == kubeVIPKubeconfig {
				g.Expect(after).To(Equal(written), "a manifest that never changed, so the kubelet does not restart kube-vip")
			}
		})
	}

	g := NewWithT(t)
	pod := &corev1.Pod{}
	g.Expect(yaml.UnmarshalStrict([]byte(spec.files[kubeVIPManifest].content), pod)).To(Succeed())
	g.Expect(pod.Spec.HostNetwork).To(BeTrue())
	// kube-vip's control-plane mode reaches the API server as
	// https://kubernetes:<port> (pkg/manager/manager.go).
	g.Expect(pod.Spec.HostAliases).To(ContainElement(corev1.HostAlias{IP: "127.0.0.1", Hostnames: []string{"kubernetes"}}))
	g.Expect(pod.Spec.Containers).To(HaveLen(1))
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	g.Expect(env).To(HaveKeyWithValue("address", flavorVariables["CONTROL_PLANE_ENDPOINT_IP"]))
	g.Expect(env).To(HaveKeyWithValue("port", "6443"))
	g.Expect(env).To(HaveKeyWithValue("cp_enable", "true"))
	// The vSphere provider's lease timings, not kube-vip's 5/3/1 s, which
	// let the address move while the first node's kube-vip restarts.
	g.Expect(env).To(HaveKeyWithValue("vip_leaseduration", "15"))
	g.Expect(env).To(HaveKeyWithValue("vip_renewdeadline", "10"))
	g.Expect(env).To(HaveKeyWithValue("vip_retryperiod", "2"))
}

// configSpec is what of a KubeadmConfigSpec a control-plane node runs
// before and after kubeadm.
type configSpec struct {
	files     map[string]file
	pre, post []string
}

type file struct {
	content     string
	permissions os.FileMode
}

// controlPlaneConfigSpec is the kubeadmConfigSpec of the flavor's
// KubeadmControlPlane, or of its ClusterClass's KubeadmControlPlaneTemplate
// with the class's patches applied.
func controlPlaneConfigSpec(t *testing.T, objs []*unstructured.Unstructured) configSpec {
	t.Helper()
	var kcp *unstructured.Unstructured
	path := []string{"spec", "kubeadmConfigSpec"}
	for _, o := range objs {
		switch o.GetKind() {
		case "KubeadmControlPlane":
			kcp = o
		case "KubeadmControlPlaneTemplate":
			kcp = asTheClusterGetsIt(t, objs, o.GetKind(), o.GetName(), patchTarget{controlPlane: true})
			path = []string{"spec", "template", "spec", "kubeadmConfigSpec"}
		}
	}
	if kcp == nil {
		t.Fatal("the flavor has no KubeadmControlPlane or KubeadmControlPlaneTemplate")
	}
	spec, _, _ := unstructured.NestedMap(kcp.Object, path...)
	s := configSpec{files: map[string]file{}}
	s.pre, _, _ = unstructured.NestedStringSlice(spec, "preKubeadmCommands")
	s.post, _, _ = unstructured.NestedStringSlice(spec, "postKubeadmCommands")
	files, _, _ := unstructured.NestedSlice(spec, "files")
	for _, f := range files {
		f := f.(map[string]any)
		content, ok := f["content"].(string)
		if !ok {
			t.Fatalf("file %v: content is %T, not a string", f["path"], f["content"])
		}
		mode := os.FileMode(0o644) // cloud-init's default
		if p, ok := f["permissions"].(string); ok {
			m, err := strconv.ParseUint(p, 8, 32)
			if err != nil {
				t.Fatalf("file %v: permissions %q: %v", f["path"], p, err)
			}
			mode = os.FileMode(m)
		}
		s.files[f["path"].(string)] = file{content: content, permissions: mode}
	}
	if _, ok := s.files[kubeVIPManifest]; !ok {
		t.Fatalf("the control plane writes no %s", kubeVIPManifest)
	}
	return s
}

// node is a control-plane node's file system under a temporary root.
type node struct {
	t      *testing.T
	root   string
	rooted *strings.Replacer
	env    []string
}

// bootControlPlaneNode writes what cloud-init writes before it runs any
// command: the kubeadm configuration (kubeadmConfig says whether for init
// or join) and the spec's files. Paths in the files and commands that name
// the node's file system are moved under the root; kubeadm is a script
// that reports kubeadmVersion.
func bootControlPlaneNode(t *testing.T, spec configSpec, kubeadmConfig, kubeadmVersion string) *node {
	t.Helper()
	root := t.TempDir()
	prefixes := []string{"/etc/kubernetes/manifests/", "/run/kubeadm/"}
	var pairs []string
	for p := range spec.files {
		if !strings.HasPrefix(p, prefixes[0]) {
			prefixes = append(prefixes, p)
		}
	}
	for _, p := range prefixes {
		pairs = append(pairs, p, root+p)
	}
	bin := filepath.Join(root, "usr", "bin")
	n := &node{t: t, root: root, rooted: strings.NewReplacer(pairs...), env: append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))}
	n.write("/usr/bin/kubeadm", "#!/bin/sh\n[ \"$*\" = 'version -o short' ] && echo "+kubeadmVersion+"\n", 0o755)
	n.write(kubeadmConfig, "# the kubeadm configuration\n", 0o640)
	for p, f := range spec.files {
		content := f.content
		if f.permissions&0o100 != 0 {
			content = n.rooted.Replace(content)
		}
		n.write(p, content, f.permissions)
	}
	return n
}

func (n *node) write(p, content string, mode os.FileMode) {
	n.t.Helper()
	full := filepath.Join(n.root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) file(p string) string {
	n.t.Helper()
	data, err := os.ReadFile(filepath.Join(n.root, filepath.FromSlash(path.Clean(p))))
	if err != nil {
		n.t.Fatal(err)
	}
	return string(data)
}

// run runs commands as cloud-init's runcmd does, each with sh -c.
func (n *node) run(commands []string) {
	n.t.Helper()
	for _, c := range commands {
		cmd := exec.CommandContext(n.t.Context(), "sh", "-c", n.rooted.Replace(c))
		cmd.Env = n.env
		if out, err := cmd.CombinedOutput(); err != nil {
			n.t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
}

// kubeVIPKubeconfigSource is the host file kube-vip's pod mounts where
// kube-vip reads its kubeconfig.
func kubeVIPKubeconfigSource(t *testing.T, manifest string) string {
	t.Helper()
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict([]byte(manifest), pod); err != nil {
		t.Fatalf("the kube-vip manifest: %v\n%s", err, manifest)
	}
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath != kubeVIPKubeconfig {
				continue
			}
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.HostPath != nil {
					return v.HostPath.Path
				}
			}
			t.Fatalf("volume %s mounted at %s is not a hostPath volume", m.Name, m.MountPath)
		}
	}
	t.Fatalf("no container of the kube-vip pod mounts %s", kubeVIPKubeconfig)
	return ""
}
