package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlcluster "sigs.k8s.io/cluster-api/cmd/clusterctl/client/cluster"
	"sigs.k8s.io/cluster-api/test/framework"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/sim"
)

// TestClusterAPIResilienceValidators runs Cluster API's own validators from
// its test framework on a cluster with Windows machines Running: every
// object of the cluster keeps, or gets back, the owner references and
// finalizers capwinOwnerReferenceAssertions and capwinFinalizerAssertions
// state after they are all removed (and after their owners' API versions
// are changed), and no object's resourceVersion moves while nothing
// changes. The validators walk clusterctl's object graph, so the CRDs are
// labelled as `clusterctl init` labels them; they report through Ginkgo, so
// they run in a Ginkgo spec of this test.
func TestClusterAPIResilienceValidators(t *testing.T) {
	t.Parallel() // see run
	g := NewWithT(t)
	o := newCluster(t, 2)
	waitRunning(t, o, 2)
	g.Expect(s.LabelAsClusterctl(t.Context())).To(Succeed())
	kubeconfig, _, err := s.WriteKubeconfigs(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())

	ginkgo.It("restores owner references and finalizers, and writes nothing while nothing changes", func(ctx ginkgo.SpecContext) {
		proxy := framework.NewClusterProxy("management", kubeconfig, s.Management.Scheme)
		owners := ownerReferenceAssertions(o)
		graph := inCluster(o)
		framework.ValidateOwnerReferencesOnUpdate(ctx, proxy, o.Namespace, o.Name, withoutStandIns(o), owners...)
		framework.ValidateOwnerReferencesResilience(ctx, proxy, o.Namespace, o.Name, withoutStandIns(o), owners...)
		framework.ValidateFinalizersResilience(ctx, proxy, o.Namespace, o.Name, graph,
			framework.CoreFinalizersAssertionWithLegacyClusters, framework.ExpFinalizersAssertion, capwinFinalizerAssertions)
		framework.ValidateResourceVersionStable(ctx, framework.ValidateResourceVersionStableInput{
			ClusterProxy:             proxy,
			Namespace:                o.Namespace,
			OwnerGraphFilterFunction: graph,
			WaitToBecomeStable:       []any{2 * time.Minute, 2 * time.Second},
			WaitToRemainStable:       []any{30 * time.Second, 3 * time.Second},
		})
	})
	RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "Cluster API's resilience validators on capwin")

	waitRunning(t, o, 2)
	noRejections(t)
}

// inCluster keeps the objects of the cluster o: cluster-scoped objects
// are another test's unless they are named for it.
func inCluster(o sim.ClusterOptions) clusterctlcluster.GetOwnerGraphFilterFunction {
	return clusterctlcluster.FilterClusterObjectsWithNameFilter(o.Name)
}

// withoutStandIns leaves out of the owner graph what the simulation makes
// in place of the KubeadmControlPlane it leaves out (Sim.CreateCluster):
// the cluster's CA and kubeconfig Secrets, and its stand-alone
// control-plane Machine with its bootstrap data Secret and HybridMachine.
// The simulation gives the Secrets the Cluster as owner once and nothing
// restores them, where KubeadmControlPlane looks after its own; and once
// every owner reference is removed, Cluster API gives the stand-alone
// Machine and its HybridMachine none back (5 minutes; not looked into:
// a real cluster's control-plane Machines are KubeadmControlPlane's).
// The Windows path (MachineDeployment to HybridMachine) is all kept.
func withoutStandIns(o sim.ClusterOptions) clusterctlcluster.GetOwnerGraphFilterFunction {
	standIns := map[string]bool{
		"Secret/" + o.Name + "-ca": true, "Secret/" + o.Name + "-kubeconfig": true, "Secret/" + controlPlaneMachine(o) + "-bootstrap": true,
		"Machine/" + controlPlaneMachine(o): true, "HybridMachine/" + controlPlaneMachine(o): true,
	}
	return func(u unstructured.Unstructured) bool {
		if standIns[u.GetKind()+"/"+u.GetName()] {
			return false
		}
		return inCluster(o)(u)
	}
}

// controlPlaneMachine is the name of the simulation's stand-alone
// control-plane Machine of cluster o.
func controlPlaneMachine(o sim.ClusterOptions) string { return o.Name + "-control-plane-0" }

type ownerAssertions = map[string]func(types.NamespacedName, []metav1.OwnerReference) error

var (
	clusterOwner                = metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster"}
	clusterClassOwner           = metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "ClusterClass"}
	machineController           = metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Controller: ptr.To(true)}
	clusterResourceSetOwner     = metav1.OwnerReference{APIVersion: addonsv1.GroupVersion.String(), Kind: "ClusterResourceSet"}
	windowsKubeadmConfigControl = metav1.OwnerReference{APIVersion: bootstrapv1.GroupVersion.String(), Kind: "WindowsKubeadmConfig", Controller: ptr.To(true)}
)

// ownerReferenceAssertions are Cluster API's maps for its own kinds
// (core, ClusterResourceSets, kubeadm bootstrap), with capwin's map and the
// Secrets and ConfigMaps of a capwin cluster. One change to Cluster API's:
// the flavor applies several ClusterResourceSets to a cluster, each an
// owner of its binding (Cluster API's map allows one or two).
func ownerReferenceAssertions(o sim.ClusterOptions) []ownerAssertions {
	exp := maps.Clone(framework.ExpOwnerReferenceAssertions)
	exp["ClusterResourceSetBinding"] = func(b types.NamespacedName, owners []metav1.OwnerReference) error {
		binding := &addonsv1.ClusterResourceSetBinding{}
		if err := s.Management.Client.Get(context.Background(), b, binding); err != nil {
			return err
		}
		return framework.HasExactOwners(owners, slices.Repeat([]metav1.OwnerReference{clusterResourceSetOwner}, len(binding.Spec.Bindings))...)
	}
	return []ownerAssertions{framework.CoreOwnerReferenceAssertion, exp, framework.KubeadmBootstrapOwnerReferenceAssertions,
		capwinOwnerReferenceAssertions(o), secretAndConfigMapOwnerAssertions(o)}
}

// capwinOwnerReferenceAssertions states what owns each of capwin's kinds.
// Cluster API sets all of these but the bootstrap data Secret's (see
// secretAndConfigMapOwnerAssertions): the Cluster controller makes the
// Cluster an owner of its infrastructure cluster, the Machine controller
// makes the Machine the controller of its infrastructure machine and
// bootstrap config, and the MachineDeployment and MachineSet controllers
// make the Cluster an owner of the templates they clone (a ClusterClass
// owns the templates it references).
func capwinOwnerReferenceAssertions(o sim.ClusterOptions) ownerAssertions {
	return ownerAssertions{
		"HybridCluster": func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasExactOwners(owners, clusterOwner)
		},
		"HybridClusterTemplate": func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasExactOwners(owners, clusterClassOwner)
		},
		"HybridMachine": func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasExactOwners(owners, machineController)
		},
		"HybridMachineTemplate": func(t types.NamespacedName, owners []metav1.OwnerReference) error {
			if t.Name == o.Name+"-control-plane" {
				// The flavor's KubeadmControlPlane would make the
				// Cluster its owner; the simulation leaves it out.
				return framework.HasExactOwners(owners)
			}
			return framework.HasOneOfExactOwners(owners, []metav1.OwnerReference{clusterOwner}, []metav1.OwnerReference{clusterClassOwner})
		},
		"WindowsKubeadmConfig": func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasExactOwners(owners, machineController)
		},
		"WindowsKubeadmConfigTemplate": func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasOneOfExactOwners(owners, []metav1.OwnerReference{clusterOwner}, []metav1.OwnerReference{clusterClassOwner})
		},
		"HybridClusterIdentity": func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			// Shared by clusters of several namespaces: no one's.
			return framework.HasExactOwners(owners)
		},
	}
}

// secretAndConfigMapOwnerAssertions: a Windows machine's bootstrap data
// Secret is controlled by its WindowsKubeadmConfig (capwin's bootstrap
// provider sets it); the vCenter credentials the HybridCluster names are
// the user's and outlive the cluster; what the ClusterResourceSets apply
// is owned by them (Cluster API sets it).
func secretAndConfigMapOwnerAssertions(o sim.ClusterOptions) ownerAssertions {
	return ownerAssertions{
		"Secret": func(sec types.NamespacedName, owners []metav1.OwnerReference) error {
			switch {
			case sec.Name == o.Name+"-vsphere-credentials":
				return framework.HasExactOwners(owners)
			case strings.HasPrefix(sec.Name, o.Name+"-windows-"):
				return framework.HasExactOwners(owners, windowsKubeadmConfigControl)
			case strings.HasPrefix(sec.Name, o.Name+"-vsphere-cpi"):
				return framework.HasExactOwners(owners, clusterResourceSetOwner)
			}
			return fmt.Errorf("no owner stated for Secret %s", sec)
		},
		"ConfigMap": func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasExactOwners(owners, clusterResourceSetOwner)
		},
	}
}

// capwinFinalizerAssertions are the finalizers capwin's reconcilers add;
// capwin's other kinds, the Secrets and the ConfigMaps have none.
var capwinFinalizerAssertions = map[string]func(types.NamespacedName) []string{
	"HybridCluster":        func(types.NamespacedName) []string { return []string{infrav1.ClusterFinalizer} },
	"HybridMachine":        func(types.NamespacedName) []string { return []string{infrav1.MachineFinalizer} },
	"WindowsKubeadmConfig": func(types.NamespacedName) []string { return []string{bootstrapv1.ConfigFinalizer} },
}
