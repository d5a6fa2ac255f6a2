package release_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/render"
)

// flannelNetConf is what flanneld reads of net-conf.json.
type flannelNetConf struct {
	Network string `json:"Network"`
	Backend struct {
		Type string `json:"Type"`
		VNI  int    `json:"VNI"`
		Port int    `json:"Port"`
	} `json:"Backend"`
}

// checkPodNetwork checks that the Linux and the Windows nodes of a
// generated flannel cluster run the same flannel backend: the net-conf.json
// the Linux DaemonSet of the cluster's flannel ClusterResourceSet mounts
// against the one capwin-node writes on a Windows node of the cluster's
// Windows MachineDeployment (its WindowsKubeadmConfigTemplate as the
// cluster gets it, through the bootstrap provider's node configuration and
// the node agent's renderer). It returns the backend.
func checkPodNetwork(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	g := NewWithT(t)
	linux := linuxFlannelNetConf(t, objs)
	windows := windowsFlannelNetConf(t, objs)
	g.Expect(linux.Network).To(Equal(windows.Network), "flannel's network on Linux and Windows")
	g.Expect(linux.Backend).To(Equal(windows.Backend), "flannel's backend on Linux and Windows")
	return windows.Backend.Type
}

func windowsFlannelNetConf(t *testing.T, objs []*unstructured.Unstructured) flannelNetConf {
	t.Helper()
	g := NewWithT(t)
	cluster := clusterOf(objs)
	tmpl := windowsConfigTemplate(t, objs)
	raw, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec")
	spec := &bootstrapv1.WindowsKubeadmConfigSpec{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(raw, spec, true)).To(Succeed())
	pods, _, _ := unstructured.NestedStringSlice(cluster.Object, "spec", "clusterNetwork", "pods", "cidrBlocks")
	services, _, _ := unstructured.NestedStringSlice(cluster.Object, "spec", "clusterNetwork", "services", "cidrBlocks")
	cfg, err := payload.NodeConfig(payload.Input{
		Spec: spec, KubernetesVersion: "v1.36.3", ControlPlaneHost: flavorVariables["CONTROL_PLANE_ENDPOINT_IP"], ControlPlanePort: 6443,
		PodCIDRs: pods, ServiceCIDRs: services,
	})
	g.Expect(err).NotTo(HaveOccurred())
	files, err := render.FlannelCNI(cfg, host.Interface{Name: "Ethernet0", IPv4: "10.0.0.15", Subnet: "10.0.0.0/24"})
	g.Expect(err).NotTo(HaveOccurred())
	i := slices.IndexFunc(files, func(f render.File) bool { return f.Path == layout.FlannelNetConf })
	g.Expect(i).NotTo(Equal(-1), "capwin-node writes %s", layout.FlannelNetConf)
	conf := flannelNetConf{}
	g.Expect(json.Unmarshal(files[i].Data, &conf)).To(Succeed())
	return conf
}

// windowsConfigTemplate returns the WindowsKubeadmConfigTemplate of the
// cluster's Windows MachineDeployment as the cluster gets it: for a
// Cluster with a topology, the ClusterClass's with the class's patches
// applied.
func windowsConfigTemplate(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	cluster := clusterOf(objs)
	g.Expect(cluster).NotTo(BeNil())
	var tmpl *unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "MachineDeployment":
			if kind, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "bootstrap", "configRef", "kind"); kind == "WindowsKubeadmConfigTemplate" {
				name, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "bootstrap", "configRef", "name")
				tmpl = asTheClusterGetsIt(t, objs, kind, name, patchTarget{})
			}
		case "ClusterClass":
			classes, _, _ := unstructured.NestedSlice(o.Object, "spec", "workers", "machineDeployments")
			for _, c := range classes {
				c := c.(map[string]any)
				ref, _, _ := unstructured.NestedStringMap(c, "bootstrap", "templateRef")
				if ref["kind"] != "WindowsKubeadmConfigTemplate" {
					continue
				}
				g.Expect(usesClass(cluster, c["class"].(string))).To(BeTrue(), "the Cluster has a MachineDeployment of class %s", c["class"])
				tmpl = asTheClusterGetsIt(t, objs, ref["kind"], ref["name"], patchTarget{machineDeploymentClass: c["class"].(string)})
			}
		}
	}
	g.Expect(tmpl).NotTo(BeNil(), "the Windows workers' WindowsKubeadmConfigTemplate")
	return tmpl
}

func usesClass(cluster *unstructured.Unstructured, class string) bool {
	mds, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "topology", "workers", "machineDeployments")
	return slices.ContainsFunc(mds, func(md any) bool { return md.(map[string]any)["class"] == class })
}

// linuxFlannelNetConf is the net-conf.json flanneld reads in the
// DaemonSet that the cluster's flannel ClusterResourceSet applies.
func linuxFlannelNetConf(t *testing.T, objs []*unstructured.Unstructured) flannelNetConf {
	t.Helper()
	g := NewWithT(t)
	addons := resourceSetAddons(t, objs, func(sel map[string]string) bool { return sel["capwin.io/cni"] == "flannel" })
	var ds *appsv1.DaemonSet
	configMaps := map[string]map[string]string{}
	for _, o := range addons {
		switch o.GetKind() {
		case "DaemonSet":
			if o.GetName() == "kube-flannel-ds" {
				ds = &appsv1.DaemonSet{}
				g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ds)).To(Succeed())
			}
		case "ConfigMap":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			configMaps[o.GetNamespace()+"/"+o.GetName()] = data
		}
	}
	g.Expect(ds).NotTo(BeNil(), "flannel's DaemonSet among the flannel ClusterResourceSet's resources")
	spec := ds.Spec.Template.Spec
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "kube-flannel" })
	g.Expect(i).NotTo(Equal(-1))
	c := spec.Containers[i]
	// flanneld's --net-config-path, or its default (flannel main.go).
	file := "/etc/kube-flannel/net-conf.json"
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		if v, ok := strings.CutPrefix(a, "--net-config-path="); ok {
			file = v
		}
	}
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			data := configMaps[ds.Namespace+"/"+v.ConfigMap.Name]
			key := path.Join(m.SubPath, rel)
			if len(v.ConfigMap.Items) > 0 {
				j := slices.IndexFunc(v.ConfigMap.Items, func(it corev1.KeyToPath) bool { return it.Path == key })
				g.Expect(j).NotTo(Equal(-1), "ConfigMap volume %s has no item at %s", v.Name, key)
				key = v.ConfigMap.Items[j].Key
			}
			g.Expect(data).To(HaveKey(key), "ConfigMap %s, which flanneld's %s comes from", v.ConfigMap.Name, file)
			conf := flannelNetConf{}
			g.Expect(json.Unmarshal([]byte(data[key]), &conf)).To(Succeed())
			return conf
		}
	}
	t.Fatalf("flanneld's %s is on no ConfigMap volume of its container", file)
	return flannelNetConf{}
}

// resourceSetAddons decodes what the flavor's ClusterResourceSets whose
// selector matches put into the workload cluster.
func resourceSetAddons(t *testing.T, objs []*unstructured.Unstructured, match func(selector map[string]string) bool) []*unstructured.Unstructured {
	t.Helper()
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	var addons []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "ClusterResourceSet" {
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "clusterSelector", "matchLabels")
		if !match(sel) {
			continue
		}
		resources, _, _ := unstructured.NestedSlice(o.Object, "spec", "resources")
		for _, r := range resources {
			r := r.(map[string]any)
			res := byName[r["kind"].(string)+"/"+r["name"].(string)]
			if res == nil {
				continue // one the user creates, as Calico's
			}
			data, _, _ := unstructured.NestedStringMap(res.Object, "data")
			if res.GetKind() == "Secret" {
				data = secretData(t, res)
			}
			for _, doc := range data {
				addons = append(addons, decode(t, []byte(doc))...)
			}
		}
	}
	return addons
}

// secretData is a Secret's stringData as generated, or its data decoded
// once the API server has answered its apply.
func secretData(t *testing.T, s *unstructured.Unstructured) map[string]string {
	t.Helper()
	if data, ok, _ := unstructured.NestedStringMap(s.Object, "stringData"); ok {
		return data
	}
	encoded, _, _ := unstructured.NestedStringMap(s.Object, "data")
	data := map[string]string{}
	for k, v := range encoded {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("Secret %s: data %s: %v", s.GetName(), k, err)
		}
		data[k] = string(b)
	}
	return data
}

// checkNetworkModeRefused: a WINDOWS_CNI_MODE that is neither overlay nor
// l2bridge gives no cluster. The flavor's Windows template or the
// ClusterClass's variable refuses it, at admission, so no Linux side is
// left with a net-conf the Windows side does not share.
func checkNetworkModeRefused(t *testing.T, objs []*unstructured.Unstructured, mode string) {
	t.Helper()
	g := NewWithT(t)
	modes := []any{string(bootstrapv1.Overlay), string(bootstrapv1.L2Bridge)}
	for _, o := range objs {
		if o.GetKind() == "Cluster" && o.Object["spec"].(map[string]any)["topology"] != nil {
			vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "topology", "variables")
			g.Expect(vars).To(ContainElement(map[string]any{"name": "windowsCNIMode", "value": mode}), "the Cluster's windowsCNIMode is WINDOWS_CNI_MODE")
		}
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "WindowsKubeadmConfigTemplate":
			if m, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "network", "mode"); m != mode {
				continue
			}
			err := env.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.ForceOwnership, client.FieldOwner("flavor-test"))
			g.Expect(err).To(MatchError(ContainSubstring("spec.template.spec.network.mode")), "WINDOWS_CNI_MODE=%s is refused", mode)
			return
		case "ClusterClass":
			vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
			for _, v := range vars {
				v := v.(map[string]any)
				if v["name"] != "windowsCNIMode" {
					continue
				}
				enum, _, _ := unstructured.NestedSlice(v, "schema", "openAPIV3Schema", "enum")
				g.Expect(enum).To(ConsistOf(modes...), "the ClusterClass's windowsCNIMode accepts the modes the API accepts")
				g.Expect(enum).NotTo(ContainElement(mode), "WINDOWS_CNI_MODE=%s is refused by the ClusterClass's variable", mode)
				return
			}
		}
	}
	t.Fatalf("nothing in the flavor refuses WINDOWS_CNI_MODE=%s", mode)
}

// vxlanOffloadRule is the udev rule the flavors' Linux machines write.
const vxlanOffloadRule = "/etc/udev/rules.d/90-flannel-vxlan.rules"

// checkVXLANOffload checks that every Linux machine of a cluster whose
// flannel backend is VXLAN (the control plane's and the Linux workers'
// bootstrap configurations) writes the udev rule that turns checksum
// offload off on flannel's VXLAN device, named after the VNI its
// net-conf.json gives.
func checkVXLANOffload(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	conf := linuxFlannelNetConf(t, objs)
	g.Expect(conf.Backend.Type).To(Equal("vxlan"))
	dev := fmt.Sprintf("flannel.%d", conf.Backend.VNI)
	if conf.Backend.VNI == 0 {
		dev = "flannel.1" // flannel's default VNI
	}
	paths := map[string][]string{
		"KubeadmControlPlane":         {"spec", "kubeadmConfigSpec", "files"},
		"KubeadmControlPlaneTemplate": {"spec", "template", "spec", "kubeadmConfigSpec", "files"},
		"KubeadmConfigTemplate":       {"spec", "template", "spec", "files"},
	}
	checked := 0
	for _, o := range objs {
		path, ok := paths[o.GetKind()]
		if !ok {
			continue
		}
		files, _, _ := unstructured.NestedSlice(o.Object, path...)
		i := slices.IndexFunc(files, func(f any) bool { return f.(map[string]any)["path"] == vxlanOffloadRule })
		g.Expect(i).NotTo(Equal(-1), "%s %s writes %s", o.GetKind(), o.GetName(), vxlanOffloadRule)
		content, _ := files[i].(map[string]any)["content"].(string)
		g.Expect(content).To(And(
			ContainSubstring(`ENV{INTERFACE}=="`+dev+`"`),
			ContainSubstring("ethtool -K "+dev+" tx-checksum-ip-generic off")),
			"%s %s: the rule names flannel's device %s", o.GetKind(), o.GetName(), dev)
		checked++
	}
	g.Expect(checked).To(BeNumerically(">=", 2), "the control plane's and the Linux workers' configurations")
}
