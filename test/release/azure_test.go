package release_test

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	var crs, hc *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "ClusterResourceSet" && o.GetName() == "win1-azure-cloud-provider":
			crs = o
		case o.GetKind() == "HybridCluster":
			hc = o
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
	g.Expect(hc).NotTo(BeNil())
	endpoint, _, _ := unstructured.NestedMap(hc.Object, "spec", "controlPlaneEndpoint")
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
		SubnetName: "node", SecurityGroupName: "win1-node-nsg", RouteTableName: "win1-node-routetable",
		LoadBalancerSku: "Standard", UseInstanceMetadata: true,
	}))
	vnet, _, _ := unstructured.NestedString(hc.Object, "spec", "azure", "network", "vnetName")
	g.Expect(vnet).To(Equal(conf.VNetName))
	subnets, _, _ := unstructured.NestedSlice(hc.Object, "spec", "azure", "network", "subnets")
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
	checked := 0
	for _, o := range objs {
		switch {
		case o.GetKind() == "HybridCluster":
			rg, _, _ := unstructured.NestedString(o.Object, "spec", "azure", "resourceGroup")
			g.Expect(rg).To(Equal("shared-rg"))
			checked++
		case o.GetKind() == "Secret" && o.GetName() == "win4-azure-cloud-config":
			data, _, _ := unstructured.NestedStringMap(o.Object, "stringData")
			for _, doc := range data {
				for _, a := range decode(t, []byte(doc)) {
					conf := azureCloudConfigOf(t, a)
					g.Expect([]string{conf.ResourceGroup, conf.VNetResourceGroup}).To(Equal([]string{"shared-rg", "shared-rg"}))
					checked++
				}
			}
		}
	}
	g.Expect(checked).To(Equal(2))
}
