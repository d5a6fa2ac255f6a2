package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/sim"
)

// TestAzureWindowsCluster runs the azure-windows flavor on a simulation of
// its own, on a simulated Azure subscription that throttles writes as ARM
// does. capwin makes the cluster's network and the API server's load
// balancer, whose address becomes the control-plane endpoint; then, on
// that one cluster (the simulated workload API server's certificate names
// one Azure address), the scenarios the vSphere tests run: a paused
// Cluster makes nothing; 0 → 5 Windows workers boot from their customData
// and cloud-node-manager (from the flavor's DaemonSets) gives their Nodes
// the Azure provider IDs Cluster API matches to the Machines; a rolling
// update replaces every VM; a MachineHealthCheck replaces a node that never
// becomes Ready; scaled to none, nothing of the Windows machines is left
// in the subscription; deleting the Cluster deletes the resource group.
// No write is throttled on the way, and no secret is in anything capwin
// said (captureOutput).
func TestAzureWindowsCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	az, err := sim.Start(ctx, sim.Options{BootDelay: bootDelay, Log: log, Platform: sim.PlatformAzure})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = az.Stop() })
	// Everything capwin says on the way is searched for secrets at the end.
	out := captureOutput(t, az)

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

	t.Run("PausedClusterChangesNothing", func(t *testing.T) {
		g := NewWithT(t)
		setPausedOn(t, az, o, true)
		// Unpaused whether or not the subtest passed: the next ones
		// scale this cluster.
		t.Cleanup(func() { setPausedOn(t, az, o, false) })
		g.Eventually(func(g Gomega) {
			md := &clusterv1.MachineDeployment{}
			g.Expect(az.Management.Client.Get(ctx, windowsMD(o), md)).To(Succeed())
			g.Expect(conditions.IsTrue(md, clusterv1.PausedCondition)).To(BeTrue())
		}, wait, 200*time.Millisecond).Should(Succeed())
		scaleOn(t, az, o, 5)
		g.Consistently(func(g Gomega) {
			g.Expect(windowsMachinesOn(ctx, g, az, o)).To(BeEmpty())
			g.Expect(az.Azure.VirtualMachines()).To(HaveLen(1), "the control plane's VM only")
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
	})

	t.Run("ScaleZeroToFive", func(t *testing.T) {
		g := NewWithT(t)
		ms := waitRunningOn(t, az, o, 5)
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
		g.Expect(az.Azure.VirtualMachines()).To(HaveLen(6), "the control plane and five Windows workers")
	})

	t.Run("RollingUpdateReplacesEveryVM", func(t *testing.T) {
		g := NewWithT(t)
		scaleOn(t, az, o, 2)
		old := waitRunningOn(t, az, o, 2)
		tmpl := &infrav1.HybridMachineTemplate{}
		g.Expect(az.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name + "-windows"}, tmpl)).To(Succeed())
		next := &infrav1.HybridMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name + "-windows-v2"},
			Spec:       tmpl.Spec,
		}
		next.Spec.Template.Spec.Azure.VMSize = "Standard_D8s_v5"
		g.Expect(az.Management.Client.Create(ctx, next)).To(Succeed())
		md := &clusterv1.MachineDeployment{}
		g.Expect(az.Management.Client.Get(ctx, windowsMD(o), md)).To(Succeed())
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Template.Spec.InfrastructureRef.Name = next.Name
		g.Expect(az.Management.Client.Patch(ctx, md, patch)).To(Succeed())

		g.Eventually(func(g Gomega) {
			ms := windowsMachinesOn(ctx, g, az, o)
			g.Expect(ms).To(HaveLen(2))
			for _, m := range ms {
				g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
				for _, o := range old {
					g.Expect(m.Name).NotTo(Equal(o.Name), "an old Machine is still there")
				}
			}
			g.Expect(az.Azure.VirtualMachines()).To(HaveLen(3), "the control plane's VM and the two new ones")
		}, wait, 200*time.Millisecond).Should(Succeed())
		for _, m := range waitRunningOn(t, az, o, 2) {
			vm := azureVM(az, m.Status.NodeRef.Name)
			g.Expect(vm).NotTo(BeNil(), "the VM of node %s", m.Status.NodeRef.Name)
			g.Expect(string(ptr.Deref(vm.Properties.HardwareProfile.VMSize, ""))).To(Equal("Standard_D8s_v5"))
		}
		for _, m := range old {
			g.Expect(azureVM(az, m.Status.NodeRef.Name)).To(BeNil(), "old VM %s not deleted", m.Status.NodeRef.Name)
		}
		g.Expect(az.Azure.Interfaces()).To(HaveLen(3), "no NIC left of the old VMs")
		g.Expect(az.Azure.Disks()).To(HaveLen(3), "no OS disk left of the old VMs")
	})

	t.Run("MachineHealthCheckReplacesUnhealthyNode", func(t *testing.T) {
		g := NewWithT(t)
		waitRunningOn(t, az, o, 2)
		// The next guest to boot (the failure is drawn once, at boot)
		// never becomes Ready.
		var sick atomic.Value
		az.Guests.SetFailure(func(node string) sim.Failure {
			if sick.CompareAndSwap(nil, node) {
				return sim.NeverReady
			}
			return sim.Healthy
		})
		t.Cleanup(func() { az.Guests.SetFailure(nil) })
		mhc := windowsMHC(o)
		g.Expect(az.Management.Client.Create(ctx, mhc)).To(Succeed())
		t.Cleanup(func() {
			if err := az.Management.Client.Delete(context.Background(), mhc); err != nil {
				t.Errorf("deleting the MachineHealthCheck: %v", err)
			}
		})
		scaleOn(t, az, o, 3)
		g.Eventually(sick.Load, wait, 200*time.Millisecond).ShouldNot(BeNil(), "a third node booted")
		ms := waitRunningOn(t, az, o, 3)
		for _, m := range ms {
			g.Expect(m.Status.NodeRef.Name).NotTo(Equal(sick.Load()), "the unhealthy node's Machine was replaced")
		}
		g.Eventually(func() any { return azureVM(az, sick.Load().(string)) }, wait, 200*time.Millisecond).Should(BeNil(), "the unhealthy node's VM is deleted")
		g.Expect(az.Azure.VirtualMachines()).To(HaveLen(4))
	})

	t.Run("ScaleToZeroLeavesNothing", func(t *testing.T) {
		g := NewWithT(t)
		scaleOn(t, az, o, 0)
		g.Eventually(func(g Gomega) {
			g.Expect(windowsMachinesOn(ctx, g, az, o)).To(BeEmpty())
			g.Expect(az.Azure.VirtualMachines()).To(HaveLen(1), "the control plane's VM only")
			g.Expect(az.Azure.Interfaces()).To(HaveLen(1), "the control plane's NIC only")
			g.Expect(az.Azure.Disks()).To(HaveLen(1), "the control plane's OS disk only")
		}, wait, 250*time.Millisecond).Should(Succeed())
	})
	g.Expect(az.Guests.Rejected()).To(BeEmpty())
	g.Expect(az.Azure.Throttled()).To(BeZero(), "writes throttled by the simulated Azure's 10 a second")

	deleteClusterOn(t, az, o, func(g Gomega) {
		g.Expect(az.Azure.ResourceGroups()).To(BeEmpty(), "the resource group capwin made is deleted")
	})
	c := out.stop(t)
	c.expectCaptured(g, kindAzureClientSecret)
	c.check(t)
}

// azureVM is the simulated Azure's VM named name, or nil.
func azureVM(az *sim.Sim, name string) *armcompute.VirtualMachine {
	for _, vm := range az.Azure.VirtualMachines() {
		if ptr.Deref(vm.Name, "") == name {
			return &vm
		}
	}
	return nil
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
