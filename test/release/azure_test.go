package release_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/test/kubeadm"
)

// azureCloudConfig is what the flavor's azure.json must say for
// cloud-provider-azure to find the cluster's resources.
type azureCloudConfig struct {
	Cloud, TenantID, SubscriptionID, AADClientID, AADClientSecret  string
	ResourceGroup, Location, VMType, VNetName, VNetResourceGroup   string
	SubnetName, SecurityGroupName, RouteTableName, LoadBalancerSku string
	UseInstanceMetadata                                            bool
}

// checkAzureCloudProvider checks what gives the Azure flavors' Nodes their
// provider IDs (docs/provider-ids.md): a ClusterResourceSet selecting this
// cluster only applies cloud-provider-azure of the cluster's Kubernetes
// minor, cloud-node-manager on every node (a HostProcess DaemonSet on the
// Windows nodes, tolerating their taints) and the cloud controller manager
// on the control plane, with an azure.json that names the user's
// credentials and the network capwin makes for the HybridCluster.
func checkAzureCloudProvider(t *testing.T, objs, addons []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	cluster := clusterOf(objs)
	g.Expect(cluster).NotTo(BeNil(), "the flavor's Cluster")
	g.Expect(cluster.GetLabels()).To(HaveKeyWithValue("capwin.io/azure-cloud-provider", "win1"))
	var crs *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterResourceSet" && o.GetName() == "win1-azure-cloud-provider" {
			crs = o
		}
	}
	g.Expect(crs).NotTo(BeNil(), "a ClusterResourceSet for cloud-provider-azure")
	sel, _, _ := unstructured.NestedStringMap(crs.Object, "spec", "clusterSelector", "matchLabels")
	g.Expect(sel).To(Equal(map[string]string{"capwin.io/azure-cloud-provider": "win1"}), "it selects this cluster only: it carries its credentials")
	resources, _, _ := unstructured.NestedSlice(crs.Object, "spec", "resources")
	g.Expect(resources).To(ConsistOf(
		map[string]any{"kind": "Secret", "name": "win1-azure-cloud-config"},
		map[string]any{"kind": "ConfigMap", "name": "win1-azure-cloud-provider"},
	))
	// capwin names the security groups and the route table it makes after
	// the HybridCluster (docs/azure.md), and azure.json names them after
	// the Cluster: the two names must be one.
	hcName, hc := infrastructureCluster(t, objs)
	g.Expect(hcName).To(Equal("win1"), "the HybridCluster is named as its Cluster")
	endpoint, _, _ := unstructured.NestedMap(hc, "controlPlaneEndpoint")
	g.Expect(endpoint).To(BeEmpty(), "capwin sets the endpoint to its load balancer's address")

	found := map[string]*unstructured.Unstructured{}
	for _, o := range addons {
		found[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	const minor = ":v1.36."
	for _, name := range []string{"cloud-node-manager", "cloud-node-manager-windows"} {
		ds := found["DaemonSet/kube-system/"+name]
		g.Expect(ds).NotTo(BeNil(), "DaemonSet %s among the add-ons", name)
		spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
		g.Expect(spec).To(HaveKeyWithValue("serviceAccountName", "cloud-node-manager"))
		containers, _, _ := unstructured.NestedSlice(spec, "containers")
		g.Expect(containers).To(HaveLen(1))
		g.Expect(containers[0].(map[string]any)["image"]).To(And(
			HavePrefix("mcr.microsoft.com/oss/v2/kubernetes/azure-cloud-node-manager:"), ContainSubstring(minor)), "the release of the flavor's Kubernetes minor")
		g.Expect(spec).To(HaveKeyWithValue("hostNetwork", true), "%s reaches the host's Instance Metadata Service", name)
		g.Expect(containers[0].(map[string]any)["env"]).To(ContainElement(map[string]any{
			"name": "NODE_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "spec.nodeName"}}}), "%s knows its node", name)
		if name == "cloud-node-manager" {
			g.Expect(containers[0].(map[string]any)["args"]).To(ContainElement("--node-name=$(NODE_NAME)"))
		}
		tolerations, _, _ := unstructured.NestedSlice(spec, "tolerations")
		g.Expect(tolerations).To(ContainElement(map[string]any{"operator": "Exists", "effect": "NoSchedule"}),
			"%s runs on the Nodes it initialises, whatever their NoSchedule taints (the uninitialised one, the Windows nodes' os=windows)", name)
	}
	checkWindowsCloudNodeManager(t, found)

	ccm := found["Deployment/kube-system/cloud-controller-manager"]
	g.Expect(ccm).NotTo(BeNil(), "the cloud controller manager among the add-ons")
	containers, _, _ := unstructured.NestedSlice(ccm.Object, "spec", "template", "spec", "containers")
	g.Expect(containers).To(HaveLen(1))
	c := containers[0].(map[string]any)
	g.Expect(c["image"]).To(ContainSubstring("azure-cloud-controller-manager" + minor))
	g.Expect(c["args"]).To(ContainElements("--cloud-provider=azure", "--controllers=*,-cloud-node", "--configure-cloud-routes=false",
		// kubeadm's kube-controller-manager allocates the pod CIDRs.
		"--allocate-node-cidrs=false", "--cloud-config=/etc/kubernetes/cloud-config/azure.json"))

	secret := found["Secret/kube-system/azure-cloud-provider"]
	g.Expect(secret).NotTo(BeNil(), "the cloud provider's azure.json among the add-ons")
	conf := azureCloudConfigOf(t, secret)
	g.Expect(conf).To(Equal(azureCloudConfig{
		Cloud: "AzurePublicCloud", TenantID: flavorVariables["AZURE_TENANT_ID"], SubscriptionID: flavorVariables["AZURE_SUBSCRIPTION_ID"],
		AADClientID: flavorVariables["AZURE_CLIENT_ID"], AADClientSecret: flavorVariables["AZURE_CLIENT_SECRET"],
		ResourceGroup: "win1", Location: "westeurope", VMType: "standard", VNetName: "win1-vnet", VNetResourceGroup: "win1",
		// The names capwin gives the Node subnets' security group and
		// route table (docs/azure.md); test/e2e checks them against the
		// resources capwin makes.
		SubnetName: "node", SecurityGroupName: hcName + "-node-nsg", RouteTableName: hcName + "-node-routetable",
		LoadBalancerSku: "Standard", UseInstanceMetadata: true,
	}))
	vnet, _, _ := unstructured.NestedString(hc, "azure", "network", "vnetName")
	g.Expect(vnet).To(Equal(conf.VNetName))
	subnets, _, _ := unstructured.NestedSlice(hc, "azure", "network", "subnets")
	g.Expect(subnets).To(ContainElement(And(HaveKeyWithValue("name", conf.SubnetName), HaveKeyWithValue("role", "Node"))))
}

func azureCloudConfigOf(t *testing.T, secret *unstructured.Unstructured) azureCloudConfig {
	t.Helper()
	raw, _, _ := unstructured.NestedString(secret.Object, "stringData", "cloud-config")
	var conf azureCloudConfig
	d := json.NewDecoder(strings.NewReader(raw))
	if err := d.Decode(&conf); err != nil {
		t.Fatalf("azure.json: %v\n%s", err, raw)
	}
	return conf
}

// checkAzureResourceGroup: AZURE_RESOURCE_GROUP, when set, names the
// resource group of the HybridCluster and of the cloud provider's
// azure.json alike (its default, the cluster's name, is checked above).
func checkAzureResourceGroup(t *testing.T, generate func(name string, vars map[string]string) []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	objs := generate("win4", map[string]string{"AZURE_RESOURCE_GROUP": "shared-rg"})
	_, hc := infrastructureCluster(t, objs)
	rg, _, _ := unstructured.NestedString(hc, "azure", "resourceGroup")
	g.Expect(rg).To(Equal("shared-rg"), "the HybridCluster's resource group")
	checked := 0
	for _, o := range objs {
		if o.GetKind() != "Secret" || o.GetName() != "win4-azure-cloud-config" {
			continue
		}
		for _, doc := range secretData(t, o) {
			for _, a := range decode(t, []byte(doc)) {
				conf := azureCloudConfigOf(t, a)
				g.Expect([]string{conf.ResourceGroup, conf.VNetResourceGroup}).To(Equal([]string{"shared-rg", "shared-rg"}))
				checked++
			}
		}
	}
	g.Expect(checked).To(Equal(1), "the cloud provider's azure.json")
}

// checkAzureFlavorValues follows the values of the Azure flavors'
// clusterctl variables (flavorVariables, with vars over them, and the
// flavors' defaults for the rest) into the objects of a cluster generated
// with them, objs: the HybridCluster (for clusterclass-azure-windows, the
// class's HybridClusterTemplate as the Cluster gets it), the machine
// templates of the control plane, the Linux and the Windows workers (the
// class's, patched), the Windows workers' CNI, and the cloud provider's
// azure.json and arguments, which must name the HybridCluster's network.
func checkAzureFlavorValues(t *testing.T, objs []*unstructured.Unstructured, vars map[string]string) {
	t.Helper()
	g := NewWithT(t)
	cluster := clusterOf(objs)
	g.Expect(cluster).NotTo(BeNil())
	name := cluster.GetName()
	value := func(v, def string) string {
		if s, ok := vars[v]; ok {
			return s
		}
		if s, ok := flavorVariables[v]; ok {
			return s
		}
		return def
	}
	forwarding := value("AZURE_ENABLE_IP_FORWARDING", "false") == "true"

	hcName, hc := infrastructureCluster(t, objs)
	g.Expect(hcName).To(Equal(name))
	g.Expect(hc["azure"]).To(Equal(map[string]any{
		"subscriptionID": value("AZURE_SUBSCRIPTION_ID", ""),
		"location":       value("AZURE_LOCATION", ""),
		"resourceGroup":  value("AZURE_RESOURCE_GROUP", name),
		"network": map[string]any{
			"vnetName":   name + "-vnet",
			"cidrBlocks": []any{value("AZURE_VNET_CIDR", "10.0.0.0/16")},
			"subnets": []any{
				map[string]any{"name": "control-plane", "role": "ControlPlane", "cidrBlock": value("AZURE_CONTROL_PLANE_SUBNET_CIDR", "10.0.0.0/24")},
				map[string]any{"name": "node", "role": "Node", "cidrBlock": value("AZURE_NODE_SUBNET_CIDR", "10.0.1.0/24")},
			},
		},
		"identityRef": map[string]any{"kind": "Secret", "name": name + "-azure-credentials"},
	}), "cluster %s: the HybridCluster's spec.azure", name)
	var identity *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Secret" && o.GetName() == name+"-azure-credentials" {
			identity = o
		}
	}
	g.Expect(identity).NotTo(BeNil(), "the Secret the HybridCluster's identityRef names")
	creds := secretData(t, identity)
	g.Expect(creds).To(Equal(map[string]string{
		"type": "ServicePrincipal", "tenantID": value("AZURE_TENANT_ID", ""),
		"clientID": value("AZURE_CLIENT_ID", ""), "clientSecret": value("AZURE_CLIENT_SECRET", ""),
	}))

	linuxImage := map[string]any{"id": value("AZURE_LINUX_IMAGE_ID", "")}
	want := map[string]struct {
		vmSize  string
		image   map[string]any
		windows bool
	}{
		"control-plane": {value("AZURE_CONTROL_PLANE_MACHINE_TYPE", "Standard_D2s_v5"), linuxImage, false},
		"linux":         {value("AZURE_NODE_MACHINE_TYPE", "Standard_D2s_v5"), linuxImage, false},
		"windows": {value("AZURE_WINDOWS_MACHINE_TYPE", "Standard_D4s_v5"), map[string]any{"computeGallery": map[string]any{
			"resourceGroup": value("AZURE_GALLERY_RESOURCE_GROUP", ""), "gallery": value("AZURE_GALLERY_NAME", ""),
			"name": value("AZURE_WINDOWS_IMAGE_NAME", "capwin-windows-2022"), "version": value("AZURE_WINDOWS_IMAGE_VERSION", ""),
		}}, true},
	}
	machines := machineTemplates(t, objs)
	g.Expect(machines).To(HaveLen(len(want)))
	for role, w := range want {
		m := machines[role]
		g.Expect(m).NotTo(BeNil(), "the %s machines' template", role)
		spec, _, _ := unstructured.NestedMap(m.Object, "spec", "template", "spec")
		os, _ := spec["os"].(map[string]any)
		azure, _ := spec["azure"].(map[string]any)
		g.Expect(azure).To(HaveKeyWithValue("vmSize", w.vmSize), "cluster %s: the %s machines' VM size", name, role)
		g.Expect(azure).To(HaveKeyWithValue("image", w.image), "cluster %s: the %s machines' image", name, role)
		g.Expect(azure).To(HaveKeyWithValue("enableIPForwarding", forwarding), "cluster %s: the %s machines' IP forwarding", name, role)
		if !w.windows {
			g.Expect(os).To(Equal(map[string]any{"type": "Linux"}))
			g.Expect(azure).To(HaveKeyWithValue("sshPublicKey", value("AZURE_SSH_PUBLIC_KEY", "")), "cluster %s: the %s machines' SSH key", name, role)
			g.Expect(azure).NotTo(HaveKey("licenseType"))
			continue
		}
		release := value("WINDOWS_RELEASE", "ltsc2022")
		g.Expect(os).To(HaveKeyWithValue("type", "Windows"))
		g.Expect(os).To(HaveKeyWithValue("windowsRelease", release), "cluster %s: the Windows workers' release", name)
		if build, ok := os["windowsBuild"]; ok {
			want, _ := infrav1.WindowsRelease(release).Build()
			g.Expect(build).To(Equal(want), "cluster %s: a Windows build, where set, is the release's", name)
		}
		g.Expect(azure).To(HaveKeyWithValue("licenseType", value("AZURE_WINDOWS_LICENSE_TYPE", "None")), "cluster %s: the Windows workers' license", name)
		g.Expect(azure).NotTo(HaveKey("sshPublicKey"), "Azure takes no SSH key for a Windows VM")
	}

	cni := value("WINDOWS_CNI", "flannel")
	g.Expect(cluster.GetLabels()).To(HaveKeyWithValue("capwin.io/cni", cni), "the label that chooses the Linux side's ClusterResourceSet")
	windowsConfig := windowsConfigTemplate(t, objs)
	got, _, _ := unstructured.NestedString(windowsConfig.Object, "spec", "template", "spec", "network", "cni")
	g.Expect(got).To(Equal(cni), "cluster %s: the Windows workers' CNI", name)

	addons := resourceSetAddons(t, objs, func(sel map[string]string) bool { return sel["capwin.io/azure-cloud-provider"] == name })
	var conf *azureCloudConfig
	var args []any
	for _, a := range addons {
		switch {
		case a.GetKind() == "Secret" && a.GetName() == "azure-cloud-provider":
			c := azureCloudConfigOf(t, a)
			conf = &c
		case a.GetKind() == "Deployment" && a.GetName() == "cloud-controller-manager":
			containers, _, _ := unstructured.NestedSlice(a.Object, "spec", "template", "spec", "containers")
			g.Expect(containers).To(HaveLen(1))
			args, _ = containers[0].(map[string]any)["args"].([]any)
		}
	}
	g.Expect(conf).NotTo(BeNil(), "cluster %s: azure.json", name)
	azure := hc["azure"].(map[string]any)
	network := azure["network"].(map[string]any)
	g.Expect([]any{conf.SubscriptionID, conf.Location, conf.ResourceGroup, conf.VNetName}).To(Equal([]any{
		azure["subscriptionID"], azure["location"], azure["resourceGroup"], network["vnetName"],
	}), "cluster %s: azure.json names the HybridCluster's subscription, region, resource group and network", name)
	g.Expect(args).To(ContainElements(
		"--cluster-cidr="+value("POD_CIDR", "10.244.0.0/16"),
		"--configure-cloud-routes="+value("AZURE_CLOUD_ROUTES", "false"),
	), "cluster %s: the cloud controller manager's arguments", name)
}

// checkWindowsCloudNodeManager: the Windows nodes' cloud-node-manager
// reads no other add-on's configuration (kubeadm's kube-proxy ConfigMap is
// missing where the control plane skips kube-proxy, and the Windows nodes
// then got no provider IDs): its script takes the API server from the
// kubeconfig the node's kubelet writes, and writes a kubeconfig with its
// own service account's token and CA, which client-go loads.
func checkWindowsCloudNodeManager(t *testing.T, found map[string]*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ds := found["DaemonSet/kube-system/cloud-node-manager-windows"]
	g.Expect(ds).NotTo(BeNil())
	volumes, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "volumes")
	var scripts string
	for _, v := range volumes {
		cm, _, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name")
		g.Expect(found).To(HaveKey("ConfigMap/kube-system/"+cm), "cloud-node-manager-windows mounts ConfigMap %s, which the cloud provider's add-ons do not make", cm)
		scripts = cm
	}
	g.Expect(volumes).To(HaveLen(1), "one volume: its script")
	script, _, _ := unstructured.NestedString(found["ConfigMap/kube-system/"+scripts].Object, "data", "start.ps1")

	// The kubelet's kubeconfig as the kubelet writes it after its TLS
	// bootstrap (client-go's clientcmd.Write), at capwin's path.
	const server = "https://20.61.10.4:6443"
	kubeletConf, err := kubeadm.KubeletKubeconfig(server)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(script).To(ContainSubstring("$kubeletConf = '"+layout.KubeletKubeconfig+"'"), "the script reads the kubelet's kubeconfig where capwin-node has the kubelet write it")
	pattern := regexp.MustCompile(`-Pattern '([^']+)'`).FindStringSubmatch(script)
	g.Expect(pattern).To(HaveLen(2), "the script finds the server with Select-String -Pattern")
	var got string
	for _, line := range strings.Split(string(kubeletConf), "\n") {
		if m := regexp.MustCompile(pattern[1]).FindStringSubmatch(line); m != nil && got == "" {
			got = m[1]
		}
	}
	g.Expect(got).To(Equal(server), "the script's pattern finds the server in:\n%s", kubeletConf)

	// The kubeconfig it writes, with $server and $account as the script
	// sets them, is one client-go loads.
	body := regexp.MustCompile(`(?s)\$lines = @\((.*?)\n\s*\)`).FindStringSubmatch(script)
	g.Expect(body).To(HaveLen(2), "the script writes its kubeconfig from $lines")
	// The service account's files, where the script points (a temporary
	// directory stands for the container's mount point).
	account := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(account, "ca.crt"), []byte("the cluster's CA"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(account, "token"), []byte("a service account token"), 0o600)).To(Succeed())
	var lines []string
	for _, l := range strings.Split(body[1], "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), ",")
		if len(l) < 2 {
			continue
		}
		l = l[1 : len(l)-1]
		lines = append(lines, strings.NewReplacer("$server", server, "$account", account).Replace(l))
	}
	cfg, err := clientcmd.Load([]byte(strings.Join(lines, "\n")))
	g.Expect(err).NotTo(HaveOccurred(), "client-go loads:\n%s", strings.Join(lines, "\n"))
	g.Expect(clientcmd.Validate(*cfg)).To(Succeed())
	current := cfg.Contexts[cfg.CurrentContext]
	g.Expect(current).NotTo(BeNil())
	g.Expect(cfg.Clusters[current.Cluster].Server).To(Equal(server))
	g.Expect(cfg.Clusters[current.Cluster].CertificateAuthority).To(Equal(account + "/ca.crt"))
	g.Expect(cfg.AuthInfos[current.AuthInfo].TokenFile).To(Equal(account + "/token"))
	g.Expect(script).To(ContainSubstring(`--kubeconfig=$kubeconfig`))
	g.Expect(script).NotTo(ContainSubstring("kube-proxy/"), "no other add-on's files")

	// And it is PowerShell (hack/ps-syntax; CAPWIN_SKIP_PS_SYNTAX=1 skips
	// it knowingly where node is missing).
	if os.Getenv("CAPWIN_SKIP_PS_SYNTAX") == "" {
		path := filepath.Join(t.TempDir(), "start.ps1")
		g.Expect(os.WriteFile(path, []byte(script), 0o600)).To(Succeed())
		out, err := exec.Command(filepath.Join("..", "..", "hack", "ps-syntax", "run.sh"), path).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "the PowerShell syntax check of cloud-node-manager-windows' start.ps1:\n%s", out)
	}
}
