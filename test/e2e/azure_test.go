package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/sim"
)

// TestAzureWindowsCluster runs the azure-windows flavor on a simulation of
// its own, on a simulated Azure subscription. capwin makes the cluster's
// network and the API server's load balancer, whose address becomes the
// control-plane endpoint; the Linux control plane and two Windows workers
// boot from their customData, and cloud-node-manager (from the flavor's
// DaemonSets) gives their Nodes the Azure provider IDs Cluster API matches
// to the Machines. Scaled to none, nothing of the Windows machines is left
// in the subscription; deleting the Cluster deletes the resource group.
func TestAzureWindowsCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	az, err := sim.Start(ctx, sim.Options{BootDelay: bootDelay, Log: log, Platform: sim.PlatformAzure})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = az.Stop() })

	o := newClusterOn(t, az, 0)
	hc := &infrav1.HybridCluster{}
	g.Expect(az.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, hc)).To(Succeed())
	g.Expect(hc.Spec.ControlPlaneEndpoint).To(Equal(clusterv1.APIEndpoint{Host: sim.AzureControlPlaneEndpointIP, Port: 6443}), "the load balancer's address")
	lbs := az.Azure.LoadBalancers()
	g.Expect(lbs).To(HaveLen(1))
	g.Expect(lbs[0].Properties.BackendAddressPools).To(HaveLen(1))
	pool := lbs[0].Properties.BackendAddressPools[0].Properties.BackendIPConfigurations
	g.Expect(pool).To(HaveLen(1), "the control-plane machine's NIC in the API server's pool")

	// The cloud controller manager's azure.json, which the flavor's
	// ClusterResourceSet puts in the workload cluster, names the network
	// capwin made.
	var conf struct{ ResourceGroup, VNetName, SubnetName, SecurityGroupName, RouteTableName string }
	g.Eventually(func(g Gomega) {
		sec := &corev1.Secret{}
		g.Expect(az.Workload.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "azure-cloud-provider"}, sec)).To(Succeed())
		g.Expect(json.Unmarshal(sec.Data["cloud-config"], &conf)).To(Succeed())
	}, wait, 250*time.Millisecond).Should(Succeed())
	g.Expect(conf.ResourceGroup).To(Equal(hc.Spec.Azure.ResourceGroup))
	var subnet *armnetwork.Subnet
	for _, v := range az.Azure.VirtualNetworks() {
		if ptr.Deref(v.Name, "") == conf.VNetName {
			for _, sn := range v.Properties.Subnets {
				if ptr.Deref(sn.Name, "") == conf.SubnetName {
					subnet = sn
				}
			}
		}
	}
	g.Expect(subnet).NotTo(BeNil(), "azure.json's subnet %s in network %s", conf.SubnetName, conf.VNetName)
	g.Expect(ptr.Deref(subnet.Properties.NetworkSecurityGroup.ID, "")).To(HaveSuffix("/networkSecurityGroups/" + conf.SecurityGroupName))
	g.Expect(ptr.Deref(subnet.Properties.RouteTable.ID, "")).To(HaveSuffix("/routeTables/" + conf.RouteTableName))

	scaleOn(t, az, o, 2)
	ms := waitRunningOn(t, az, o, 2)
	group := strings.ToLower(hc.Spec.Azure.ResourceGroup)
	for _, m := range ms {
		node := &corev1.Node{}
		g.Expect(az.Workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
		g.Expect(node.Spec.ProviderID).To(Equal("azure:///subscriptions/" + sim.AzureSubscription + "/resourceGroups/" + group + "/providers/Microsoft.Compute/virtualMachines/" + node.Name))
		g.Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelTopologyRegion, sim.AzureLocation))
		g.Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelInstanceTypeStable, "Standard_D4s_v5"))
		g.Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelTopologyZone, "0"), "a VM without a zone: its fault domain")
		g.Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", "node.cloudprovider.kubernetes.io/uninitialized")))
		g.Expect(node.Status.Addresses).To(ContainElement(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: nicAddress(az, node.Name)}))
	}
	g.Expect(az.Azure.VirtualMachines()).To(HaveLen(3), "the control plane and two Windows workers")
	g.Expect(az.Guests.Rejected()).To(BeEmpty())

	scaleOn(t, az, o, 0)
	g.Eventually(func(g Gomega) {
		g.Expect(windowsMachinesOn(ctx, g, az, o)).To(BeEmpty())
		g.Expect(az.Azure.VirtualMachines()).To(HaveLen(1), "the control plane's VM only")
		g.Expect(az.Azure.Interfaces()).To(HaveLen(1), "the control plane's NIC only")
		g.Expect(az.Azure.Disks()).To(HaveLen(1), "the control plane's OS disk only")
	}, wait, 250*time.Millisecond).Should(Succeed())

	c := &clusterv1.Cluster{}
	g.Expect(az.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, c)).To(Succeed())
	g.Expect(az.Management.Client.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := az.Management.Client.Get(ctx, client.ObjectKeyFromObject(c), &clusterv1.Cluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Cluster is gone")
		g.Expect(az.Azure.ResourceGroups()).To(BeEmpty(), "the resource group capwin made is deleted")
	}, wait, 250*time.Millisecond).Should(Succeed())
}

// nicAddress is the private address of the network interface of the VM
// named name.
func nicAddress(az *sim.Sim, name string) string {
	for _, n := range az.Azure.Interfaces() {
		if ptr.Deref(n.Name, "") == name+"-nic" {
			return ptr.Deref(n.Properties.IPConfigurations[0].Properties.PrivateIPAddress, "")
		}
	}
	return ""
}
