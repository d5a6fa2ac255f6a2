package release_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/platform/vsphere/vspheresim/cpi"
	"github.com/capwin/capwin/test/envtest"
)

var variableRef = regexp.MustCompile(`\$\{([A-Z0-9_]+)`)

// flavorVariables are the values a user gives clusterctl for every flavor.
var flavorVariables = map[string]string{
	"CONTROL_PLANE_ENDPOINT_IP":    "10.0.0.100",
	"VSPHERE_SERVER":               "vcenter.example.com",
	"VSPHERE_DATACENTER":           "dc0",
	"VSPHERE_TLS_THUMBPRINT":       "A1:B2:C3:D4:E5:F6:07:18:29:3A:4B:5C:6D:7E:8F:90:A1:B2:C3:D4",
	"VSPHERE_USERNAME":             "capwin@vsphere.local",
	"VSPHERE_PASSWORD":             `se"c\r''et`, // what YAML's double quotes would mangle; a ' doubled, as the flavors ask
	"VSPHERE_FOLDER":               "/dc0/vm/capwin",
	"VSPHERE_RESOURCE_POOL":        "/dc0/host/cluster0/Resources",
	"VSPHERE_DATASTORE":            "datastore1",
	"VSPHERE_NETWORK":              "VM Network",
	"VSPHERE_LINUX_TEMPLATE":       "ubuntu-2404-kube-v1.36.3",
	"VSPHERE_WINDOWS_TEMPLATE":     "windows-2022-kube-v1.36.3",
	"WINDOWS_WORKER_MACHINE_COUNT": "2",
	"VSPHERE_SSH_AUTHORIZED_KEY":   "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi capwin@example",
	"AZURE_SUBSCRIPTION_ID":        "0a1b2c3d-1111-2222-3333-444444444444",
	"AZURE_TENANT_ID":              "1b2c3d4e-1111-2222-3333-444444444444",
	"AZURE_CLIENT_ID":              "2c3d4e5f-1111-2222-3333-444444444444",
	"AZURE_CLIENT_SECRET":          "Xy7~Q.abc_def-123", // the characters Entra ID's generated secrets use
	"AZURE_LOCATION":               "westeurope",
	"AZURE_LINUX_IMAGE_ID":         "/subscriptions/0a1b2c3d-1111-2222-3333-444444444444/resourceGroups/images/providers/Microsoft.Compute/galleries/capi/images/ubuntu-2404-kube/versions/1.36.3",
	"AZURE_GALLERY_RESOURCE_GROUP": "images",
	"AZURE_GALLERY_NAME":           "capwin",
	"AZURE_WINDOWS_IMAGE_VERSION":  "1.36.3",
	"AZURE_SSH_PUBLIC_KEY":         "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi capwin@example",
}

// TestGenerateClusterFlavors runs clusterctl's generate cluster (its client
// library, of the version go.mod pins, in this process) against a local
// repository laid out as clusterctl's overrides are, for every flavor in
// templates/, and applies what it generates, server-side and dry run,
// through capwin's webhooks.
func TestGenerateClusterFlavors(t *testing.T) {
	g := NewWithT(t)
	root := envtest.RepoRoot()
	repo := t.TempDir()
	version := filepath.Join(repo, "infrastructure-capwin", "v0.1.0")
	g.Expect(os.MkdirAll(version, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(version, "infrastructure-components.yaml"), kustomize(t, "infrastructure"), 0o644)).To(Succeed())
	copyFile(t, filepath.Join(root, "metadata.yaml"), filepath.Join(version, "metadata.yaml"))
	flavors, err := filepath.Glob(filepath.Join(root, "templates", "cluster-template-*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(flavors).NotTo(BeEmpty())
	classes, err := filepath.Glob(filepath.Join(root, "templates", "clusterclass-*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range append(append([]string{}, flavors...), classes...) {
		copyFile(t, f, filepath.Join(version, filepath.Base(f)))
	}

	for _, f := range flavors {
		flavor := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "cluster-template-"), ".yaml")
		t.Run(flavor, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			ns, err := env.CreateNamespace(ctx, "flavor")
			g.Expect(err).NotTo(HaveOccurred())

			listed := generateCluster(t, repo, nil, clusterctlclient.GetClusterTemplateOptions{
				ClusterName: "win1", TargetNamespace: ns.Name, ListVariablesOnly: true,
				ProviderRepositorySource: &clusterctlclient.ProviderRepositorySourceOptions{InfrastructureProvider: "capwin:v0.1.0", Flavor: flavor},
			})
			vars := listed.Variables()
			// Every variable the flavor uses is listed, but those clusterctl
			// fills in itself.
			data, err := os.ReadFile(f)
			g.Expect(err).NotTo(HaveOccurred())
			for _, m := range variableRef.FindAllStringSubmatch(string(data), -1) {
				if name := m[1]; name != "CLUSTER_NAME" && name != "NAMESPACE" {
					g.Expect(vars).To(ContainElement(name), "the listed variables name %s", name)
				}
			}
			generate := func(name string, vars map[string]string) []*unstructured.Unstructured {
				tmpl := generateCluster(t, repo, vars, clusterctlclient.GetClusterTemplateOptions{
					ClusterName: name, TargetNamespace: ns.Name, KubernetesVersion: "v1.36.3",
					ControlPlaneMachineCount: ptr.To[int64](1), WorkerMachineCount: ptr.To[int64](1),
					ProviderRepositorySource: &clusterctlclient.ProviderRepositorySourceOptions{InfrastructureProvider: "capwin:v0.1.0", Flavor: flavor},
				})
				out, err := tmpl.Yaml()
				if err != nil {
					t.Fatal(err)
				}
				return decode(t, out)
			}
			objs := generate("win1", nil)
			g.Expect(objs).NotTo(BeEmpty())
			// A second cluster of the flavor in the same namespace, the
			// other network mode.
			other := generate("win2", map[string]string{"POD_CIDR": "10.245.0.0/16", "WINDOWS_CNI_MODE": "l2bridge"})
			checkResourceSetsSelectTheirCluster(t, objs, other)
			g.Expect(checkPodNetwork(t, objs)).To(Equal("vxlan"), "WINDOWS_CNI_MODE's default, overlay")
			azure := strings.Contains(flavor, "azure")
			if !azure {
				checkVXLANOffload(t, objs) // a VMware NIC's fault
			}
			g.Expect(checkPodNetwork(t, other)).To(Equal("host-gw"), "WINDOWS_CNI_MODE=l2bridge")
			checkNetworkModeRefused(t, generate("win3", map[string]string{"WINDOWS_CNI_MODE": "vxlan"}), "vxlan")
			checkWindowsNodeIdentity(t, objs)
			var addons []*unstructured.Unstructured
			for _, o := range objs {
				switch o.GetKind() {
				case "ConfigMap":
					data, _, _ := unstructured.NestedStringMap(o.Object, "data")
					for _, doc := range data {
						addons = append(addons, decode(t, []byte(doc))...)
					}
				case "Secret":
					if o.Object["type"] == "addons.cluster.x-k8s.io/resource-set" {
						data, _, _ := unstructured.NestedStringMap(o.Object, "stringData")
						for _, doc := range data {
							addons = append(addons, decode(t, []byte(doc))...)
						}
					}
				}
				// Applied last: the dry run writes the server's answer
				// back into o (a Secret's stringData becomes data).
				err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.ForceOwnership, client.FieldOwner("flavor-test"))
				g.Expect(err).NotTo(HaveOccurred(), "%s %s", o.GetKind(), o.GetName())
			}
			checkKubeletsExternalCloudProvider(t, objs)
			// A cluster with values other than the defaults, as the
			// management cluster gets it next to the first one: objs now
			// hold the API server's answers, the class's templates
			// defaulted by capwin's webhooks.
			variant := appliedWith(objs, generate("win5", otherValues))
			if classOf(objs) != nil {
				t.Run("Cluster API admits the topology", func(t *testing.T) {
					checkClusterAPIAdmitsTopology(t, ns.Name, objs, variant)
				})
				t.Run("the class's patch templates quote what they print", func(t *testing.T) {
					checkPatchTemplatesQuote(t, objs)
				})
			}
			t.Run("the cluster's templates are admitted", func(t *testing.T) {
				checkTopologyAdmitted(t, objs)
				checkTopologyAdmitted(t, variant)
			})
			if azure {
				checkAzureCloudProvider(t, objs, addons)
				checkAzureResourceGroup(t, generate)
				checkAzureFlavorValues(t, objs, nil)
				checkAzureFlavorValues(t, variant, otherValues)
			} else {
				checkCloudProvider(t, objs, addons)
				checkKubeVIP(t, objs)
				checkVSphereTemplates(t, objs, nil)
				checkVSphereTemplates(t, variant, otherValues)
			}
			// Each CNI choice has a ClusterResourceSet for its Linux side.
			cniSets := map[string]bool{}
			for _, o := range objs {
				if o.GetKind() != "ClusterResourceSet" {
					continue
				}
				if cni, ok, _ := unstructured.NestedString(o.Object, "spec", "clusterSelector", "matchLabels", "capwin.io/cni"); ok {
					cniSets[cni] = true
				}
			}
			g.Expect(cniSets).To(Equal(map[string]bool{"flannel": true, "calico": true}), "a ClusterResourceSet per WINDOWS_CNI choice")
			// The add-ons ClusterResourceSets put into the workload cluster
			// are checked against the same API server.
			g.Expect(addons).NotTo(BeEmpty())
			// A DaemonSet is pinned to Linux nodes, or to Windows nodes
			// as a HostProcess pod (Windows nodes run capwin-node's
			// services, not Linux images).
			for _, o := range addons {
				if o.GetKind() == "DaemonSet" {
					sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "spec", "nodeSelector")
					if sel["kubernetes.io/os"] == "windows" {
						hpc, _, _ := unstructured.NestedBool(o.Object, "spec", "template", "spec", "securityContext", "windowsOptions", "hostProcess")
						g.Expect(hpc).To(BeTrue(), "Windows add-on %s runs as a HostProcess pod", o.GetName())
						continue
					}
					g.Expect(sel).To(HaveKeyWithValue("kubernetes.io/os", "linux"), "Linux-only add-on %s is pinned to Linux nodes", o.GetName())
				}
			}
			for _, o := range addons {
				if o.GetKind() == "Namespace" {
					ns := &corev1.Namespace{}
					ns.Name = o.GetName()
					g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, ns))).To(Succeed())
					continue
				}
				err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.ForceOwnership, client.FieldOwner("flavor-test"))
				g.Expect(err).NotTo(HaveOccurred(), "add-on %s %s", o.GetKind(), o.GetName())
			}
		})
	}
}

// generateCluster runs clusterctl's generate cluster, in this process
// through clusterctl's own client library (the code the clusterctl command
// runs, of the version go.mod pins), against the local repository repo
// laid out as clusterctl's overrides are, with flavorVariables and vars,
// which win, as the user's variables.
func generateCluster(t *testing.T, repo string, vars map[string]string, o clusterctlclient.GetClusterTemplateOptions) clusterctlclient.Template {
	t.Helper()
	ctx := t.Context()
	reader := clusterctlconfig.NewMemoryReader()
	if _, err := reader.AddProvider("capwin", clusterctlv1.InfrastructureProviderType, filepath.Join(repo, "infrastructure-capwin", "v0.1.0", "infrastructure-components.yaml")); err != nil {
		t.Fatal(err)
	}
	// No overrides or cache from the user's configuration.
	reader.Set("overridesFolder", filepath.Join(repo, "overrides"))
	for k, v := range flavorVariables {
		reader.Set(k, v)
	}
	for k, v := range vars {
		reader.Set(k, v)
	}
	cfg, err := clusterctlconfig.New(ctx, "", clusterctlconfig.InjectReader(reader))
	if err != nil {
		t.Fatal(err)
	}
	c, err := clusterctlclient.New(ctx, "", clusterctlclient.InjectConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := c.GetClusterTemplate(ctx, o)
	if err != nil {
		t.Fatalf("clusterctl generate cluster %s --flavor %s: %v", o.ClusterName, o.ProviderRepositorySource.Flavor, err)
	}
	return tmpl
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkKubeletsExternalCloudProvider: every kubelet configuration of the
// flavor runs with --cloud-provider=external, leaving the provider ID to
// the cloud provider's add-on (docs/provider-ids.md).
func checkKubeletsExternalCloudProvider(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	paths := map[string][][]string{
		"KubeadmControlPlane": {
			{"spec", "kubeadmConfigSpec", "initConfiguration", "nodeRegistration"},
			{"spec", "kubeadmConfigSpec", "joinConfiguration", "nodeRegistration"},
		},
		"KubeadmControlPlaneTemplate": {
			{"spec", "template", "spec", "kubeadmConfigSpec", "initConfiguration", "nodeRegistration"},
			{"spec", "template", "spec", "kubeadmConfigSpec", "joinConfiguration", "nodeRegistration"},
		},
		"KubeadmConfigTemplate":        {{"spec", "template", "spec", "joinConfiguration", "nodeRegistration"}},
		"WindowsKubeadmConfigTemplate": {{"spec", "template", "spec", "nodeRegistration"}},
	}
	kinds := map[string]int{}
	for _, o := range objs {
		for _, p := range paths[o.GetKind()] {
			kinds[o.GetKind()]++
			args, _, _ := unstructured.NestedSlice(o.Object, append(p, "kubeletExtraArgs")...)
			g.Expect(args).To(ContainElement(map[string]any{"name": "cloud-provider", "value": "external"}),
				"%s %s: %s runs the kubelet with --cloud-provider=external", o.GetKind(), o.GetName(), strings.Join(p, "."))
		}
	}
	g.Expect(kinds).To(HaveKey("WindowsKubeadmConfigTemplate"))
	g.Expect(kinds).To(HaveKey("KubeadmConfigTemplate"))
	g.Expect(kinds["KubeadmControlPlane"]+kinds["KubeadmControlPlaneTemplate"]).To(Equal(2), "the control plane's init and join configurations")
}

// checkCloudProvider checks what gives the vSphere flavors' Nodes their
// provider IDs (docs/provider-ids.md): a ClusterResourceSet selecting this
// cluster applies the vSphere CPI, pinned, on the control plane, with a
// configuration and credentials that point at the user's vCenter.
func checkCloudProvider(t *testing.T, objs, addons []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	cluster := clusterOf(objs)
	g.Expect(cluster).NotTo(BeNil(), "the flavor's Cluster")
	g.Expect(cluster.GetLabels()).To(HaveKeyWithValue("capwin.io/vsphere-cpi", "win1"))

	var crs *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterResourceSet" && o.GetName() == "win1-vsphere-cpi" {
			crs = o
		}
		if o.GetKind() == "HybridCluster" || o.GetKind() == "HybridClusterTemplate" {
			path := []string{"spec", "vsphere", "server"}
			if o.GetKind() == "HybridClusterTemplate" {
				path = []string{"spec", "template", "spec", "vsphere", "server"}
			}
			server, _, _ := unstructured.NestedString(o.Object, path...)
			g.Expect(server).To(Equal("vcenter.example.com:443"), "VSPHERE_SERVER with the default VSPHERE_PORT")
		}
	}
	g.Expect(crs).NotTo(BeNil(), "a ClusterResourceSet for the vSphere CPI")
	sel, _, _ := unstructured.NestedStringMap(crs.Object, "spec", "clusterSelector", "matchLabels")
	g.Expect(sel).To(Equal(map[string]string{"capwin.io/vsphere-cpi": "win1"}), "it selects this cluster only: it carries its credentials")
	resources, _, _ := unstructured.NestedSlice(crs.Object, "spec", "resources")
	g.Expect(resources).To(ConsistOf(
		map[string]any{"kind": "Secret", "name": "win1-vsphere-cpi-credentials"},
		map[string]any{"kind": "ConfigMap", "name": "win1-vsphere-cpi"},
	))

	found := map[string]*unstructured.Unstructured{}
	for _, o := range addons {
		found[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	ds := found["DaemonSet/kube-system/vsphere-cloud-controller-manager"]
	g.Expect(ds).NotTo(BeNil(), "the CPI's DaemonSet among the add-ons %v", slices.Collect(maps.Keys(found)))
	containers, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	g.Expect(containers).To(HaveLen(1))
	g.Expect(containers[0]).To(HaveKeyWithValue("image", "registry.k8s.io/cloud-pv-vsphere/cloud-provider-vsphere:v1.36.0"), "the CPI release of the flavor's Kubernetes minor")
	sel, _, _ = unstructured.NestedStringMap(ds.Object, "spec", "template", "spec", "nodeSelector")
	g.Expect(sel).To(HaveKey("node-role.kubernetes.io/control-plane"))
	tolerations, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "tolerations")
	g.Expect(tolerations).To(ContainElement(HaveKeyWithValue("key", "node.cloudprovider.kubernetes.io/uninitialized")), "it must run on the Nodes it initialises")

	cm := found["ConfigMap/kube-system/vsphere-cloud-config"]
	g.Expect(cm).NotTo(BeNil(), "the CPI's configuration among the add-ons")
	conf, _, _ := unstructured.NestedString(cm.Object, "data", "vsphere.conf")
	vc, err := cpi.ParseConfig([]byte(conf))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*vc).To(Equal(cpi.VCenter{
		Server: "vcenter.example.com", Port: 443, Datacenters: []string{"dc0"},
		Thumbprint: flavorVariables["VSPHERE_TLS_THUMBPRINT"], SecretName: "vsphere-cloud-secret", SecretNamespace: "kube-system",
	}))
	secret := found["Secret/kube-system/vsphere-cloud-secret"]
	g.Expect(secret).NotTo(BeNil(), "the CPI's credentials among the add-ons")
	creds, _, _ := unstructured.NestedStringMap(secret.Object, "stringData")
	g.Expect(creds).To(Equal(map[string]string{
		"vcenter.example.com.username": "capwin@vsphere.local", "vcenter.example.com.password": `se"c\r'et`,
	}))
}

// checkResourceSetsSelectTheirCluster: each ClusterResourceSet of a
// generated cluster selects that cluster and no other cluster of the same
// flavor in its namespace. ApplyOnce creates what a workload cluster lacks
// and keeps what it has, so a set that selected other clusters could give
// a cluster another's pod network configuration, whichever came first.
func checkResourceSetsSelectTheirCluster(t *testing.T, generated ...[]*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	clusters := map[string]labels.Set{}
	for _, objs := range generated {
		for _, o := range objs {
			if o.GetKind() == "Cluster" {
				clusters[o.GetName()] = o.GetLabels()
			}
		}
	}
	g.Expect(clusters).To(HaveLen(len(generated)))
	for _, objs := range generated {
		var own string
		var sets []*unstructured.Unstructured
		for _, o := range objs {
			switch o.GetKind() {
			case "Cluster":
				own = o.GetName()
			case "ClusterResourceSet":
				sets = append(sets, o)
			}
		}
		g.Expect(sets).NotTo(BeEmpty())
		for _, set := range sets {
			sel, _, _ := unstructured.NestedStringMap(set.Object, "spec", "clusterSelector", "matchLabels")
			expr, _, _ := unstructured.NestedSlice(set.Object, "spec", "clusterSelector", "matchExpressions")
			g.Expect(expr).To(BeEmpty(), "ClusterResourceSet %s selects by matchLabels only", set.GetName())
			for name, l := range clusters {
				if name == own {
					continue
				}
				g.Expect(labels.SelectorFromSet(sel).Matches(l)).To(BeFalse(), "ClusterResourceSet %s of cluster %s selects cluster %s", set.GetName(), own, name)
			}
			// Its own cluster with the WINDOWS_CNI the set is for.
			l := labels.Merge(clusters[own], nil)
			if cni, ok := sel["capwin.io/cni"]; ok {
				l["capwin.io/cni"] = cni
			}
			g.Expect(labels.SelectorFromSet(sel).Matches(l)).To(BeTrue(), "ClusterResourceSet %s selects its own cluster %s", set.GetName(), own)
		}
	}
}

func clusterOf(objs []*unstructured.Unstructured) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == "Cluster" {
			return o
		}
	}
	return nil
}

// checkVSphereTemplates checks that each of the cluster's kinds of machine
// in objs is cloned from the VM template its variable names, with vars
// over the flavors' values: VSPHERE_LINUX_TEMPLATE for the control plane
// and the Linux workers, VSPHERE_WINDOWS_TEMPLATE for the Windows workers.
// A VM template holds one Kubernetes version, so a cluster of a class must
// get its own, not those of the cluster the class was generated with.
func checkVSphereTemplates(t *testing.T, objs []*unstructured.Unstructured, vars map[string]string) {
	t.Helper()
	g := NewWithT(t)
	value := func(v string) string {
		if s, ok := vars[v]; ok {
			return s
		}
		return flavorVariables[v]
	}
	want := map[string]string{
		"control-plane": value("VSPHERE_LINUX_TEMPLATE"),
		"linux":         value("VSPHERE_LINUX_TEMPLATE"),
		"windows":       value("VSPHERE_WINDOWS_TEMPLATE"),
	}
	machines := machineTemplates(t, objs)
	g.Expect(machines).To(HaveLen(len(want)))
	for role, template := range want {
		g.Expect(machines).To(HaveKey(role))
		got, _, _ := unstructured.NestedString(machines[role].Object, "spec", "template", "spec", "vsphere", "template")
		g.Expect(got).To(Equal(template), "cluster %s: the %s machines' VM template", clusterOf(objs).GetName(), role)
	}
	// A class patch that wrote one kind's template into another's would
	// pass the checks above while a later patch wrote over it: none does.
	class := classOf(objs)
	if class == nil {
		return
	}
	notFor := map[string][]patchTarget{
		"linuxTemplate":   {{machineDeploymentClass: "windows"}},
		"windowsTemplate": {{controlPlane: true}, {machineDeploymentClass: "linux"}},
	}
	patches, _, _ := unstructured.NestedSlice(class.Object, "spec", "patches")
	for _, p := range patches {
		definitions, _, _ := unstructured.NestedSlice(p.(map[string]any), "definitions")
		for _, d := range definitions {
			d := d.(map[string]any)
			selector, _, _ := unstructured.NestedMap(d, "selector")
			ops, _, _ := unstructured.NestedSlice(d, "jsonPatches")
			for _, op := range ops {
				variable, _, _ := unstructured.NestedString(op.(map[string]any), "valueFrom", "variable")
				for _, target := range notFor[variable] {
					g.Expect(selects(selector, "HybridMachineTemplate", target)).To(BeFalse(), "patch %v writes %s into the machines of %+v", p.(map[string]any)["name"], variable, target)
				}
			}
		}
	}
}
