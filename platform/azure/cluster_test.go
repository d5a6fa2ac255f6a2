package azure_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/azure"
	"github.com/capwin/capwin/platform/azure/azuresim"
)

// newEmptyEnv is a simulated Azure with nothing in it, and a HybridCluster
// of Cluster ns/c1 whose resource group and network capwin is to make.
func newEmptyEnv(t *testing.T, o azuresim.Options) *testEnv {
	t.Helper()
	o.SubscriptionID = subscription
	cloud := azuresim.New(o)
	opts := cloud.ClientOptions()
	retry := azure.RetryOptions()
	retry.RetryDelay = 0
	opts.Retry = retry
	return &testEnv{
		cloud: cloud, opts: opts,
		cluster: &infrav1.HybridCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hc", Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
			Spec: infrav1.HybridClusterSpec{Azure: &infrav1.AzureClusterSpec{
				SubscriptionID: subscription, Location: "westeurope", ResourceGroup: group,
				Network: infrav1.AzureNetworkSpec{VNetName: "vnet", CIDRBlocks: []string{"10.1.0.0/16"}, Subnets: []infrav1.AzureSubnet{
					{Name: "cp", Role: infrav1.SubnetControlPlane, CIDRBlock: "10.1.0.0/24"},
					{Name: "nodes", Role: infrav1.SubnetNode, CIDRBlock: "10.1.1.0/24"},
				}},
				IdentityRef: infrav1.IdentityReference{Kind: infrav1.SecretIdentity, Name: "azure"},
			}},
		},
		secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "azure"}, Data: map[string][]byte{
			"tenantID": []byte("tenant"), "clientID": []byte("client"), "clientSecret": []byte("secret"),
		}},
	}
}

// ensureCluster calls EnsureCluster as the reconciler does, each time on
// a fresh Platform (a restarted controller), recording the operation and
// the endpoint, until the infrastructure is ready; it returns the calls
// made and the operations recorded.
func ensureCluster(t *testing.T, e *testEnv) (int, []string) {
	t.Helper()
	var ops []string
	for steps := 1; steps <= 30; steps++ {
		st, err := e.platform(t).EnsureCluster(t.Context())
		e.cluster.Status.Operation = st.Operation
		if err != nil {
			t.Fatalf("step %d: %v", steps, err)
		}
		if ep := st.ControlPlaneEndpoint; ep.IsValid() && !e.cluster.Spec.ControlPlaneEndpoint.IsValid() {
			e.cluster.Spec.ControlPlaneEndpoint = ep
		}
		if !st.Operation.IsZero() && (len(ops) == 0 || ops[len(ops)-1] != string(st.Operation.Type)+" "+st.Operation.Resource) {
			ops = append(ops, string(st.Operation.Type)+" "+st.Operation.Resource)
		}
		if st.Ready() {
			return steps, ops
		}
		if st.Waiting == "" {
			t.Fatalf("step %d: not ready, and says not why", steps)
		}
	}
	t.Fatal("the cluster's infrastructure was not made in 30 steps")
	return 0, nil
}

// deleteCluster calls DeleteCluster until it reports gone; it returns the
// operations recorded.
func deleteCluster(t *testing.T, e *testEnv) []string {
	t.Helper()
	var ops []string
	for steps := 1; steps <= 30; steps++ {
		gone, op, err := e.platform(t).DeleteCluster(t.Context())
		e.cluster.Status.Operation = op
		if err != nil {
			t.Fatalf("step %d: %v", steps, err)
		}
		if !op.IsZero() && (len(ops) == 0 || ops[len(ops)-1] != string(op.Type)+" "+op.Resource) {
			ops = append(ops, string(op.Type)+" "+op.Resource)
		}
		if gone {
			return ops
		}
	}
	t.Fatal("the cluster's infrastructure was not deleted in 30 steps")
	return nil
}

func controlPlaneMachine(name string) *platform.Machine {
	m := windowsMachine(name)
	hm := m.HybridMachine
	hm.Labels[clusterv1.MachineControlPlaneLabel] = ""
	hm.Spec.OS.Type = infrav1.OSLinux
	hm.Spec.Azure.LicenseType = ""
	hm.Spec.Azure.SSHPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb9 capwin"
	m.BootstrapData = []byte("#cloud-config\n")
	return m
}

// TestClusterInfrastructureMadeAndDeleted makes a cluster's resource
// group, network and API server load balancer in an empty subscription,
// one operation per call and across restarts; puts a control-plane
// machine behind the load balancer; and deletes it all with the resource
// group capwin made.
func TestClusterInfrastructureMadeAndDeleted(t *testing.T) {
	e := newEmptyEnv(t, azuresim.Options{Polls: 2})
	steps, ops := ensureCluster(t, e)
	want := []string{
		"Create networkSecurityGroups/hc-controlplane-nsg", "Create networkSecurityGroups/hc-node-nsg", "Create routeTables/hc-node-routetable",
		"Create virtualNetworks/vnet", "Create publicIPAddresses/hc-apiserver-pip", "Create loadBalancers/hc-apiserver-lb",
	}
	if !slices.Equal(ops, want) {
		t.Errorf("operations recorded:\n%v\nwant\n%v", ops, want)
	}
	t.Logf("made in %d calls", steps)

	groups := e.cloud.ResourceGroups()
	if len(groups) != 1 || ptr.Deref(groups[0].Tags[azure.ClusterTag], "") != "ns/c1" {
		t.Fatalf("resource groups: %+v; want %s tagged %s=ns/c1", groups, group, azure.ClusterTag)
	}
	vnets := e.cloud.VirtualNetworks()
	if len(vnets) != 1 {
		t.Fatalf("%d virtual networks", len(vnets))
	}
	subnets := map[string]*armnetwork.Subnet{}
	for _, s := range vnets[0].Properties.Subnets {
		subnets[*s.Name] = s
	}
	if cp := subnets["cp"]; cp == nil || !strings.HasSuffix(*cp.Properties.NetworkSecurityGroup.ID, "/hc-controlplane-nsg") || cp.Properties.RouteTable != nil {
		t.Errorf("control-plane subnet: %+v", cp)
	}
	if n := subnets["nodes"]; n == nil || !strings.HasSuffix(*n.Properties.NetworkSecurityGroup.ID, "/hc-node-nsg") || n.Properties.RouteTable == nil || !strings.HasSuffix(*n.Properties.RouteTable.ID, "/hc-node-routetable") {
		t.Errorf("node subnet: %+v", n)
	}
	ep := e.cluster.Spec.ControlPlaneEndpoint
	if !ep.IsValid() || ep.Port != 6443 || !strings.HasPrefix(ep.Host, "20.") {
		t.Fatalf("control plane endpoint %+v; want the public IP address and port 6443", ep)
	}

	// Ready: a second call makes nothing, and reports the zones as
	// failure domains.
	before := e.cloud.Writes()
	e.cluster.Spec.Azure.Zones = []string{"1", "3"}
	st, err := e.platform(t).EnsureCluster(t.Context())
	if err != nil || !st.Ready() || st.ControlPlaneEndpoint != ep {
		t.Fatalf("again: %+v, %v", st, err)
	}
	want = []string{"1 true", "3 true"}
	var got []string
	for _, fd := range st.FailureDomains {
		got = append(got, fmt.Sprintf("%s %v", fd.Name, ptr.Deref(fd.ControlPlane, false)))
	}
	if !slices.Equal(got, want) {
		t.Errorf("failure domains %v, want %v (name, for the control plane)", got, want)
	}
	if w := e.cloud.Writes(); w != before {
		t.Errorf("a ready cluster's EnsureCluster wrote %d times", w-before)
	}

	m := controlPlaneMachine("cp-0")
	p := e.platform(t)
	ensure(t, p, m)
	lbs := e.cloud.LoadBalancers()
	if len(lbs) != 1 {
		t.Fatalf("%d load balancers", len(lbs))
	}
	pool := lbs[0].Properties.BackendAddressPools[0].Properties.BackendIPConfigurations
	if len(pool) != 1 || !strings.Contains(*pool[0].ID, "/networkInterfaces/cp-0-nic/") {
		t.Errorf("the API server's backend pool holds %v; want cp-0-nic's IP configuration", pool)
	}
	// A Windows worker is not behind it.
	ensure(t, p, windowsMachine("win-0"))
	if pool := e.cloud.LoadBalancers()[0].Properties.BackendAddressPools[0].Properties.BackendIPConfigurations; len(pool) != 1 {
		t.Errorf("the backend pool holds %d IP configurations; want only the control plane's", len(pool))
	}

	deleteMachine(t, p, m)
	deleteMachine(t, p, windowsMachine("win-0"))

	if ops := deleteCluster(t, e); !slices.Equal(ops, []string{"Delete resourceGroups/capwin-rg"}) {
		t.Errorf("delete operations: %v; want the resource group's alone", ops)
	}
	if g := e.cloud.ResourceGroups(); len(g) != 0 {
		t.Errorf("resource groups left: %d", len(g))
	}
}

// TestExistingGroupAndNetworkAreKept: a resource group and virtual network
// made beforehand are used as they are (no security group or route table
// is made for them), and only what capwin made, the load balancer and its
// address, is deleted.
func TestExistingGroupAndNetworkAreKept(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 1})
	e.cluster.Labels = map[string]string{clusterv1.ClusterNameLabel: "c1"}
	_, ops := ensureCluster(t, e)
	if want := []string{"Create publicIPAddresses/hc-apiserver-pip", "Create loadBalancers/hc-apiserver-lb"}; !slices.Equal(ops, want) {
		t.Errorf("operations: %v; want %v", ops, want)
	}
	if s := e.cloud.VirtualNetworks()[0].Properties.Subnets; s[0].Properties.NetworkSecurityGroup != nil || s[1].Properties.RouteTable != nil {
		t.Error("a network made beforehand was changed")
	}
	if want := []string{"Delete loadBalancers/hc-apiserver-lb", "Delete publicIPAddresses/hc-apiserver-pip"}; !slices.Equal(deleteCluster(t, e), want) {
		t.Errorf("delete operations differ from %v", want)
	}
	if len(e.cloud.ResourceGroups()) != 1 || len(e.cloud.VirtualNetworks()) != 1 || len(e.cloud.LoadBalancers()) != 0 {
		t.Errorf("left: %d groups, %d networks, %d load balancers; want the group and network alone", len(e.cloud.ResourceGroups()), len(e.cloud.VirtualNetworks()), len(e.cloud.LoadBalancers()))
	}
}

// TestExistingNetworkLacksASubnet names the subnet a network made
// beforehand lacks; capwin does not change such a network.
func TestExistingNetworkLacksASubnet(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	e.cluster.Spec.Azure.Network.Subnets = append(e.cluster.Spec.Azure.Network.Subnets, infrav1.AzureSubnet{Name: "more-nodes", Role: infrav1.SubnetNode, CIDRBlock: "10.1.2.0/24"})
	_, err := e.platform(t).EnsureCluster(t.Context())
	if !errors.Is(err, platform.ErrNotFound) || !strings.Contains(err.Error(), "Subnet more-nodes does not exist in virtual network vnet") {
		t.Fatalf("got %v; want ErrNotFound naming subnet more-nodes", err)
	}
}

// TestSubnetDeletedIsMadeAgain: a subnet gone from a network capwin made
// is made again with its security group and route table.
func TestSubnetDeletedIsMadeAgain(t *testing.T) {
	e := newEmptyEnv(t, azuresim.Options{Polls: 1})
	e.cluster.Spec.Azure.APIServerLoadBalancer = infrav1.APIServerLoadBalancerNone
	ensureCluster(t, e)
	subnets, err := armnetwork.NewSubnetsClient(subscription, azuresim.Credential(), e.opts)
	must(t, err)
	poller, err := subnets.BeginDelete(t.Context(), group, "vnet", "nodes", nil)
	must(t, err)
	finish(t, poller)
	if _, ops := ensureCluster(t, e); !slices.Equal(ops, []string{"Create virtualNetworks/vnet/subnets/nodes"}) {
		t.Errorf("operations: %v; want the subnet's create", ops)
	}
	got, err := subnets.Get(t.Context(), group, "vnet", "nodes", nil)
	must(t, err)
	if got.Properties.RouteTable == nil || got.Properties.NetworkSecurityGroup == nil {
		t.Errorf("the subnet made again lacks its route table or security group: %+v", got.Properties)
	}
}

// TestNameClashIsRefused: a security group with capwin's name for the
// cluster that capwin did not make is not used.
func TestNameClashIsRefused(t *testing.T) {
	e := newEmptyEnv(t, azuresim.Options{})
	groups, err := armresources.NewResourceGroupsClient(subscription, azuresim.Credential(), e.opts)
	must(t, err)
	_, err = groups.CreateOrUpdate(t.Context(), group, armresources.ResourceGroup{Location: ptr.To("westeurope")}, nil)
	must(t, err)
	nsgs, err := armnetwork.NewSecurityGroupsClient(subscription, azuresim.Credential(), e.opts)
	must(t, err)
	poller, err := nsgs.BeginCreateOrUpdate(t.Context(), group, "hc-controlplane-nsg", armnetwork.SecurityGroup{Location: ptr.To("westeurope")}, nil)
	must(t, err)
	finish(t, poller)
	_, err = e.platform(t).EnsureCluster(t.Context())
	if !errors.Is(err, platform.ErrInvalid) || !strings.Contains(err.Error(), "security group hc-controlplane-nsg exists") || !strings.Contains(err.Error(), "ns/c1") {
		t.Fatalf("got %v; want ErrInvalid naming the security group and the cluster", err)
	}
	// Deleting the cluster leaves the security group and the group,
	// neither of which capwin made.
	deleteCluster(t, e)
	if _, err := nsgs.Get(t.Context(), group, "hc-controlplane-nsg", nil); err != nil {
		t.Errorf("the security group capwin did not make was deleted: %v", err)
	}
}

// TestEndpointOtherThanTheLoadBalancers is refused: with a Public load
// balancer, spec.controlPlaneEndpoint is capwin's to set.
func TestEndpointOtherThanTheLoadBalancers(t *testing.T) {
	e := newEmptyEnv(t, azuresim.Options{})
	e.cluster.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "10.1.0.100", Port: 6443}
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		var st platform.ClusterState
		st, err = e.platform(t).EnsureCluster(t.Context())
		e.cluster.Status.Operation = st.Operation
		if err == nil && st.Ready() {
			t.Fatal("ready with an endpoint that is not the load balancer's")
		}
	}
	if !errors.Is(err, platform.ErrInvalid) || !strings.Contains(err.Error(), "spec.controlPlaneEndpoint is 10.1.0.100:6443") {
		t.Fatalf("got %v; want ErrInvalid naming spec.controlPlaneEndpoint", err)
	}
}

// TestClusterOperationFailureIsReported: a create Azure fails late is
// reported as ErrOperationFailed with Azure's words, and no longer
// recorded.
func TestClusterOperationFailureIsReported(t *testing.T) {
	e := newEmptyEnv(t, azuresim.Options{Polls: 1})
	e.cluster.Spec.Azure.APIServerLoadBalancer = infrav1.APIServerLoadBalancerNone
	e.cloud.SetFault(func(req *http.Request) *http.Response {
		if !strings.HasSuffix(req.URL.Path, "/virtualNetworks/vnet/get/fake/status") {
			return nil
		}
		r := serverError(req)
		r.StatusCode, r.Status = http.StatusBadRequest, "400 Bad Request"
		r.Body = io.NopCloser(strings.NewReader(`{"error":{"code":"NetcfgInvalidSubnet","message":"Subnet 'nodes' is not valid in virtual network 'vnet'."}}`))
		return r
	})
	var (
		st  platform.ClusterState
		err error
	)
	for i := 0; i < 20 && err == nil; i++ {
		st, err = e.platform(t).EnsureCluster(t.Context())
		e.cluster.Status.Operation = st.Operation
	}
	if !errors.Is(err, platform.ErrOperationFailed) || !strings.Contains(err.Error(), "creating virtual network vnet") || !strings.Contains(err.Error(), "is not valid in virtual network") {
		t.Fatalf("got %v; want ErrOperationFailed for the virtual network, with Azure's words", err)
	}
	if !st.Operation.IsZero() {
		t.Errorf("the failed create is still recorded: %+v", st.Operation)
	}
}

// TestSharedGroupIsKept: when the resource group capwin made for one
// cluster also holds another cluster's resources, deleting the first
// deletes its own resources one by one and keeps the group and the
// other's.
func TestSharedGroupIsKept(t *testing.T) {
	a := newEmptyEnv(t, azuresim.Options{Polls: 1})
	ensureCluster(t, a)
	// Cluster ns/c2, HybridCluster hc2, in the same group and network.
	b := &testEnv{cloud: a.cloud, opts: a.opts, secret: a.secret, cluster: a.cluster.DeepCopy()}
	b.cluster.Name = "hc2"
	b.cluster.Labels[clusterv1.ClusterNameLabel] = "c2"
	b.cluster.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{}
	b.cluster.Status.Operation = infrav1.ClusterOperation{}
	ensureCluster(t, b)
	if n := len(a.cloud.LoadBalancers()); n != 2 {
		t.Fatalf("%d load balancers, want one per cluster", n)
	}

	ops := deleteCluster(t, a)
	if slices.Contains(ops, "Delete resourceGroups/capwin-rg") {
		t.Fatalf("the group holding another cluster's resources was deleted: %v", ops)
	}
	if want := "Delete loadBalancers/hc-apiserver-lb"; len(ops) == 0 || ops[0] != want {
		t.Errorf("delete operations %v; want them to start with %s", ops, want)
	}
	lbs := a.cloud.LoadBalancers()
	if len(lbs) != 1 || *lbs[0].Name != "hc2-apiserver-lb" || len(a.cloud.ResourceGroups()) != 1 {
		t.Errorf("left %d load balancers and %d groups; want hc2's load balancer and the group", len(lbs), len(a.cloud.ResourceGroups()))
	}
}

// TestSubnetsMadeAtOnceAreAllMade: subnets whose creates end in their
// first answer are made in one call, all of them, before the cluster is
// ready.
func TestSubnetsMadeAtOnceAreAllMade(t *testing.T) {
	e := newEmptyEnv(t, azuresim.Options{})
	e.cluster.Spec.Azure.APIServerLoadBalancer = infrav1.APIServerLoadBalancerNone
	ensureCluster(t, e)
	subnets, err := armnetwork.NewSubnetsClient(subscription, azuresim.Credential(), e.opts)
	must(t, err)
	for _, s := range []string{"cp", "nodes"} {
		poller, err := subnets.BeginDelete(t.Context(), group, "vnet", s, nil)
		must(t, err)
		finish(t, poller)
	}
	st, err := e.platform(t).EnsureCluster(t.Context())
	if err != nil || !st.Ready() {
		t.Fatalf("%+v, %v", st, err)
	}
	for _, s := range []string{"cp", "nodes"} {
		if _, err := subnets.Get(t.Context(), group, "vnet", s, nil); err != nil {
			t.Errorf("subnet %s: %v", s, err)
		}
	}
}

// TestFailedDeleteSaysWhy: a delete Azure fails is returned with Azure's
// words, not started again in silence.
func TestFailedDeleteSaysWhy(t *testing.T) {
	e := newEmptyEnv(t, azuresim.Options{Polls: 1})
	e.cluster.Spec.Azure.APIServerLoadBalancer = infrav1.APIServerLoadBalancerNone
	ensureCluster(t, e)
	e.cloud.SetFault(func(req *http.Request) *http.Response {
		if !strings.HasSuffix(req.URL.Path, "/resourcegroups/capwin-rg/get/fake/status") && !strings.HasSuffix(req.URL.Path, "/resourceGroups/capwin-rg/get/fake/status") {
			return nil
		}
		r := serverError(req)
		r.StatusCode, r.Status = http.StatusConflict, "409 Conflict"
		r.Body = io.NopCloser(strings.NewReader(`{"error":{"code":"ResourceGroupDeletionBlocked","message":"Deletion of resource group 'capwin-rg' failed as resources with identifiers 'x' could not be deleted."}}`))
		return r
	})
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		var op infrav1.ClusterOperation
		_, op, err = e.platform(t).DeleteCluster(t.Context())
		e.cluster.Status.Operation = op
	}
	if !errors.Is(err, platform.ErrOperationFailed) || !strings.Contains(err.Error(), "could not be deleted") {
		t.Fatalf("got %v; want ErrOperationFailed with Azure's words", err)
	}
}
