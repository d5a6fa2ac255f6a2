package controllers_test

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/controllers"
	"github.com/capwin/capwin/platform/azure"
	"github.com/capwin/capwin/platform/azure/azuresim"
	"github.com/capwin/capwin/platform/factory"
	"github.com/capwin/capwin/test/builder"
)

const azureSubscription = "00000000-1111-2222-3333-444444444444"

// startAzureClusterController runs the HybridCluster reconciler against a
// simulated Azure, polling operations every 100 ms.
func startAzureClusterController(t *testing.T, cloud *azuresim.Cloud, ns string) {
	t.Helper()
	mgr, err := env.NewManager(func(o *manager.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	})
	if err != nil {
		t.Fatal(err)
	}
	clients := azure.NewClients(azure.Options{
		ClientOptions: cloud.ClientOptions(),
		NewCredential: func(azure.Credentials) (azcore.TokenCredential, error) { return azuresim.Credential(), nil },
	})
	platforms := &factory.Factory{Client: mgr.GetClient(), ControllerNamespace: "capwin-system", Azure: clients}
	r := &controllers.HybridClusterReconciler{Client: mgr.GetClient(), Platforms: platforms, OperationPoll: 100 * time.Millisecond}
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 2}); err != nil {
		t.Fatal(err)
	}
	stop, err := env.StartManager(t.Context(), mgr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
}

// TestAzureClusterInfrastructure: an Azure HybridCluster in an empty
// subscription gets its resource group, network and API server load
// balancer through recorded operations, its control plane endpoint and
// its provisioned mark and its zones as failure domains; deleted, it takes the resource group capwin made
// with it.
func TestAzureClusterInfrastructure(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	cloud := azuresim.New(azuresim.Options{SubscriptionID: azureSubscription, Polls: 1})
	ns := newNamespace(t)
	startAzureClusterController(t, cloud, ns)

	c := builder.Cluster(ns, "win1").Build()
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "azure-creds"}, Data: map[string][]byte{
		"tenantID": []byte("tenant"), "clientID": []byte("client"), "clientSecret": []byte("secret"),
	}}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	hc := builder.VSphereCluster(ns, "win1").WithOwner(c).Build()
	hc.Labels = map[string]string{clusterv1.ClusterNameLabel: "win1"}
	hc.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{}
	hc.Spec.VSphere = nil
	hc.Spec.Azure = &infrav1.AzureClusterSpec{
		SubscriptionID: azureSubscription, Location: "westeurope", ResourceGroup: "win1-rg",
		Network: infrav1.AzureNetworkSpec{VNetName: "win1-vnet", CIDRBlocks: []string{"10.1.0.0/16"}, Subnets: []infrav1.AzureSubnet{
			{Name: "cp", Role: infrav1.SubnetControlPlane, CIDRBlock: "10.1.0.0/24"}, {Name: "nodes", Role: infrav1.SubnetNode, CIDRBlock: "10.1.1.0/24"}}},
		IdentityRef: infrav1.IdentityReference{Kind: infrav1.SecretIdentity, Name: "azure-creds"},
		Zones:       []string{"1", "2"},
	}
	g.Expect(env.Client.Create(ctx, hc)).To(Succeed())

	// An operation is seen recorded in the status on the way.
	sawOperation := false
	g.Eventually(func(g Gomega) {
		got := &infrav1.HybridCluster{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hc), got)).To(Succeed())
		if !got.Status.Operation.IsZero() {
			sawOperation = true
			g.Expect(condReason(g, got, infrav1.HybridClusterInfrastructureProvisionedCondition)).To(Equal(infrav1.HybridClusterProvisioningReason))
		}
		g.Expect(got.Status.Initialization.Provisioned).To(Equal(ptr.To(true)), "conditions %+v, operation %+v", got.Status.Conditions, got.Status.Operation)
		g.Expect(got.Status.Operation.IsZero()).To(BeTrue())
		g.Expect(got.Spec.ControlPlaneEndpoint.Port).To(Equal(int32(6443)))
		g.Expect(got.Spec.ControlPlaneEndpoint.Host).To(HavePrefix("20."))
		g.Expect(conditions.IsTrue(got, infrav1.HybridClusterInfrastructureProvisionedCondition)).To(BeTrue())
		g.Expect(conditions.IsTrue(got, infrav1.HybridClusterReadyCondition)).To(BeTrue())
		g.Expect(got.Status.FailureDomains).To(Equal([]clusterv1.FailureDomain{{Name: "1", ControlPlane: ptr.To(true)}, {Name: "2", ControlPlane: ptr.To(true)}}), "the zones are the failure domains")
	}, eventually, 20*time.Millisecond).Should(Succeed())
	if !sawOperation {
		// Each lasts a reconcile's OperationPoll (100 ms); the test
		// looks every 20 ms.
		t.Error("no operation was seen recorded in status.operation")
	}
	g.Expect(cloud.LoadBalancers()).To(HaveLen(1))
	g.Expect(cloud.ResourceGroups()).To(HaveLen(1))

	g.Expect(env.Client.Delete(ctx, hc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(hc), &infrav1.HybridCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HybridCluster is still there: %v", err)
	}, eventually).Should(Succeed())
	g.Expect(cloud.ResourceGroups()).To(BeEmpty(), "the resource group capwin made outlived the cluster")
}
