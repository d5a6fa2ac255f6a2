package controllers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/kubeconfig"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/userdata"
	"github.com/capwin/capwin/node-components/agent"
	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/platform/vsphere"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/builder"
)

// joiningCluster is provisionedCluster whose workload cluster is the test
// API server itself, reached through the ClusterCache: the kubeconfig
// Secret is created before the infrastructure is provisioned, when the
// ClusterCache first connects (should its cache not have the Secret yet,
// it tries again in apiserver.ClusterCacheRetry). Call disconnect before
// the test ends: without its Cluster the ClusterCache closes its
// connections, which the API server otherwise waits for when it stops.
func joiningCluster(t testing.TB, v *vspheresim.VCenter) (ns string, disconnect func()) {
	t.Helper()
	g := NewWithT(t)
	ns = newNamespace(t)
	_, cc := startControllersWithCache(t, vsphere.NewSessions(), ns)
	cluster(t, v, ns, nil)
	c := &clusterv1.Cluster{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, c)).To(Succeed())
	g.Expect(env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "win1-kubeconfig", Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "win1"}},
		Data:       map[string][]byte{"value": kubeconfig.FromEnvTestConfig(env.Config, c)},
	})).To(Succeed())
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: discovery.ProgressNamespace}}))).To(Succeed())
	markInfrastructureProvisioned(t, ns)
	return ns, func() {
		g.Expect(client.IgnoreNotFound(env.Client.Delete(t.Context(), c))).To(Succeed())
		g.Eventually(func() error {
			_, err := cc.GetClient(t.Context(), client.ObjectKeyFromObject(c))
			return err
		}, eventually).ShouldNot(Succeed())
	}
}

// report writes a node's progress as its agent does, into the ConfigMap
// named after the Machine; raw, when given, is written as it is.
func report(t testing.TB, machine string, p agent.Progress, raw ...string) {
	t.Helper()
	g := NewWithT(t)
	data, err := json.Marshal(p)
	g.Expect(err).NotTo(HaveOccurred())
	if len(raw) > 0 {
		data = []byte(raw[0])
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: discovery.ProgressNamespace, Name: machine}}
	err = env.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), cm)
	cm.Data = map[string]string{discovery.ProgressKey: string(data)}
	if err != nil {
		g.Expect(env.Client.Create(t.Context(), cm)).To(Succeed())
		// The namespace is the whole API server's, named for no test: a
		// report left behind would be the next run's first (-count=2).
		t.Cleanup(func() {
			g.Expect(client.IgnoreNotFound(env.Client.Delete(context.WithoutCancel(t.Context()), cm))).To(Succeed())
		})
		return
	}
	g.Expect(env.Client.Update(t.Context(), cm)).To(Succeed())
}

func condOf(g Gomega, ns, name, t string) metav1.Condition {
	c := conditions.Get(getHM(g, ns, name), t)
	g.Expect(c).NotTo(BeNil(), "condition %s not set", t)
	return *c
}

// TestJoinProgressReachesHybridMachine: the node's reports, read from the
// workload cluster, become status.nodeBootstrap and NodeJoined; a failure
// makes Ready False, a running join does not.
func TestJoinProgressReachesHybridMachine(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, disconnect := joiningCluster(t, v)
	defer disconnect()
	machine(t, ns, "join1", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "join1").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		c := condOf(g, ns, "join1", infrav1.HybridMachineNodeJoinedCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(c.Reason).To(Equal(infrav1.HybridMachineNodeJoinedWaitingForReportReason))
		g.Expect(c.Message).To(ContainSubstring("capwin-node status"))
	}, eventually).Should(Succeed())

	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	report(t, "join1", agent.Progress{NodeName: "win-abc", Phase: agent.PhaseKubelet, State: agent.ProgressRunning, Message: "starting the kubelet", Time: at})
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "join1")
		g.Expect(hm.Status.NodeBootstrap.Phase).To(Equal("kubelet"))
		g.Expect(hm.Status.NodeBootstrap.State).To(Equal(infrav1.NodeBootstrapRunning))
		g.Expect(hm.Status.NodeBootstrap.LastUpdateTime.Time.Equal(at)).To(BeTrue())
		g.Expect(condReason(g, hm, infrav1.HybridMachineNodeJoinedCondition)).To(Equal(infrav1.HybridMachineNodeJoinedJoiningReason))
		g.Expect(conditions.IsTrue(hm, infrav1.HybridMachineReadyCondition)).To(BeTrue(), "a join that runs leaves Ready as the VM has it")
	}, eventually).Should(Succeed())

	report(t, "join1", agent.Progress{Phase: agent.PhaseNodeRegistration, State: agent.ProgressFailed, Message: "the API server refused the label", Time: at})
	g.Eventually(func(g Gomega) {
		c := condOf(g, ns, "join1", infrav1.HybridMachineNodeJoinedCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal("NodeRegistrationFailed"))
		g.Expect(c.Message).To(And(ContainSubstring("the API server refused the label"), ContainSubstring("will not pass by itself")))
		ready := condOf(g, ns, "join1", infrav1.HybridMachineReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("the API server refused the label"))
	}, eventually).Should(Succeed())

	report(t, "join1", agent.Progress{}, "{not json")
	g.Eventually(func(g Gomega) {
		c := condOf(g, ns, "join1", infrav1.HybridMachineNodeJoinedCondition)
		g.Expect(c.Reason).To(Equal(infrav1.HybridMachineNodeJoinedInvalidReportReason))
		g.Expect(c.Message).To(ContainSubstring("does not parse"))
	}, eventually).Should(Succeed())

	report(t, "join1", agent.Progress{Phase: agent.PhaseComplete, State: agent.ProgressJoined, Time: at})
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "join1")
		g.Expect(conditions.IsTrue(hm, infrav1.HybridMachineNodeJoinedCondition)).To(BeTrue())
		g.Expect(conditions.IsTrue(hm, infrav1.HybridMachineReadyCondition)).To(BeTrue())
		g.Expect(hm.Status.NodeBootstrap.State).To(Equal(infrav1.NodeBootstrapJoined))
	}, eventually).Should(Succeed())

	// Joined, the report is no longer read.
	report(t, "join1", agent.Progress{Phase: agent.PhaseKubelet, State: agent.ProgressFailed, Time: at})
	g.Consistently(func(g Gomega) {
		g.Expect(getHM(g, ns, "join1").Status.NodeBootstrap.State).To(Equal(infrav1.NodeBootstrapJoined))
	}, 7*time.Second, time.Second).Should(Succeed())
}

// TestLinuxMachineHasNoNodeJoined: kubeadm joins a Linux node without
// capwin's agent, so its machine has no NodeJoined condition.
func TestLinuxMachineHasNoNodeJoined(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	linuxMachine(t, ns, "lin1")
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "lin1")
		g.Expect(hm.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		g.Expect(conditions.IsTrue(hm, infrav1.HybridMachineReadyCondition)).To(BeTrue())
		g.Expect(conditions.Get(hm, infrav1.HybridMachineNodeJoinedCondition)).To(BeNil())
	}, eventually).Should(Succeed())
}

// guestUserData is the user data the machine's VM carries.
func guestUserData(g Gomega, v *vspheresim.VCenter, ns, name string) string {
	all, err := v.VMs(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	for _, vm := range all {
		if vm.InstanceUUID == vsphere.InstanceUUID(ns, name) {
			enc := vm.ExtraConfig["guestinfo.userdata"]
			if enc == "" {
				return ""
			}
			data, err := userdata.DecodeGzipBase64(enc)
			g.Expect(err).NotTo(HaveOccurred())
			return string(data)
		}
	}
	g.Expect(false).To(BeTrue(), "no VM for %s", name)
	return ""
}

// replaceBootstrapData does what the bootstrap provider does when it
// replaces a token: it rewrites the data Secret's value.
func replaceBootstrapData(t testing.TB, ns, name, value string) {
	t.Helper()
	g := NewWithT(t)
	s := &corev1.Secret{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name + "-bootstrap"}, s)).To(Succeed())
	s.Data["value"] = []byte(value)
	g.Expect(env.Client.Update(t.Context(), s)).To(Succeed())
}

const (
	firstData  = "#ps1_sysnative\n$NodeConfig = 'e30='\n"
	secondData = "#ps1_sysnative\n$NodeConfig = 'eyJ0b2tlbiI6Im5ldyJ9'\n"
)

// TestReplacedBootstrapDataReachesRunningVM: data replaced after the VM
// powered on (its node has not joined) is written to the VM. The change
// to the Secret wakes the machine. The tests' reconciler never polls for
// reports; what else wakes a provisioned machine here is the 15 s look
// for guest addresses (vcsim's VMs report none), and the data is replaced
// right after one, so the 10 s allowed fail without the watch.
func TestReplacedBootstrapDataReachesRunningVM(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	machine(t, ns, "ud1", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "ud1").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		g.Expect(guestUserData(g, v, ns, "ud1")).To(Equal(firstData))
	}, eventually).Should(Succeed())

	replaceBootstrapData(t, ns, "ud1", secondData)
	g.Eventually(func(g Gomega) {
		g.Expect(guestUserData(g, v, ns, "ud1")).To(Equal(secondData))
		g.Expect(getHM(g, ns, "ud1").Status.Operation.IsZero()).To(BeTrue())
	}, 10*time.Second, 250*time.Millisecond).Should(Succeed())
	g.Expect(conditions.IsTrue(getHM(g, ns, "ud1"), infrav1.HybridMachineVMProvisionedCondition)).To(BeTrue())
}

// TestNoRewriteAfterNodeJoined: once the Machine has a nodeRef the data
// is cleared from the VM and a changed Secret is not written back.
func TestNoRewriteAfterNodeJoined(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	machine(t, ns, "ud2", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "ud2").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
	m := &clusterv1.Machine{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ud2"}, m)).To(Succeed())
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: "ud2"}
	g.Expect(env.Client.Status().Update(t.Context(), m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsTrue(getHM(g, ns, "ud2"), infrav1.HybridMachineBootstrapDataClearedCondition)).To(BeTrue())
		g.Expect(guestUserData(g, v, ns, "ud2")).To(BeEmpty())
	}, eventually).Should(Succeed())

	replaceBootstrapData(t, ns, "ud2", secondData)
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ud2"}, m)).To(Succeed())
	m.Labels = map[string]string{"poke": "1"}
	g.Expect(env.Client.Update(t.Context(), m)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(guestUserData(g, v, ns, "ud2")).To(BeEmpty())
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
}

// TestFirstPowerOnCarriesNewestData: data replaced while the clone runs is
// on the VM when it first powers on, for a machine whose clone stays off
// until its network metadata is written (a static address). One with a
// single DHCP NIC is powered on by its clone, with the data of its clone,
// and the newest reaches it while it runs.
func TestFirstPowerOnCarriesNewestData(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	vspheresim.DelayTasks(t, map[string]int{"CloneVm": 3000})
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	data := builder.BootstrapDataSecret(ns, "ud3-bootstrap", "powershell", firstData)
	data.Labels = map[string]string{clusterv1.ClusterNameLabel: "win1"}
	g.Expect(env.Client.Create(t.Context(), data)).To(Succeed())
	m := builder.Machine(ns, "ud3", "win1").WithBootstrapDataSecret(data.Name).Build()
	g.Expect(env.Client.Create(t.Context(), m)).To(Succeed())
	g.Expect(env.Client.Create(t.Context(), builder.WindowsVSphereMachine(ns, "ud3").WithStaticAddress("10.0.0.21/24", "10.0.0.1").WithOwner(m).Build())).To(Succeed())
	machine(t, ns, "ud4", "DC0_H0_VM0")
	for _, name := range []string{"ud3", "ud4"} {
		g.Eventually(func(g Gomega) {
			g.Expect(getHM(g, ns, name).Status.Operation.Type).To(Equal(infrav1.MachineOperationCreate))
		}, eventually).Should(Succeed())
		replaceBootstrapData(t, ns, name, secondData)
	}

	// The user data each VM has when it is first seen running.
	atPowerOn := map[string]string{}
	g.Eventually(func(g Gomega) {
		all, err := v.VMs(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		for _, vm := range all {
			for _, name := range []string{"ud3", "ud4"} {
				if _, seen := atPowerOn[name]; !seen && vm.InstanceUUID == vsphere.InstanceUUID(ns, name) && vm.PoweredOn {
					data, err := userdata.DecodeGzipBase64(vm.ExtraConfig["guestinfo.userdata"])
					g.Expect(err).NotTo(HaveOccurred())
					atPowerOn[name] = string(data)
				}
			}
		}
		g.Expect(atPowerOn).To(HaveLen(2), "not both running yet")
	}, eventually, 50*time.Millisecond).Should(Succeed())
	g.Expect(atPowerOn["ud3"]).To(Equal(secondData), "the static machine's first boot")
	// The DHCP machine booted with its clone's data, which may have been
	// rewritten before it was first seen running: only that the newest
	// reaches it is checked.
	g.Eventually(func(g Gomega) {
		g.Expect(guestUserData(g, v, ns, "ud4")).To(Equal(secondData))
	}, eventually, 250*time.Millisecond).Should(Succeed())
}

// linuxMachine creates a Machine with cloud-config bootstrap data and its
// Linux HybridMachine.
func linuxMachine(t testing.TB, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	data := builder.BootstrapDataSecret(ns, name+"-bootstrap", "cloud-config", "#cloud-config\n")
	g.Expect(env.Client.Create(t.Context(), data)).To(Succeed())
	m := builder.Machine(ns, name, "win1").WithBootstrapDataSecret(data.Name).Build()
	g.Expect(env.Client.Create(t.Context(), m)).To(Succeed())
	g.Expect(env.Client.Create(t.Context(), builder.WindowsVSphereMachine(ns, name).Linux().WithOwner(m).Build())).To(Succeed())
}

// TestReportAfterNodeRefEndsWithTheJoin: the kubelet registers its Node
// (and the Machine gets its nodeRef) while the agent still runs its last
// phases; the report is read on until it says Joined, so the status does
// not stay at the phase the Node appeared in.
func TestReportAfterNodeRefEndsWithTheJoin(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, disconnect := joiningCluster(t, v)
	defer disconnect()
	machine(t, ns, "join2", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "join2").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
	report(t, "join2", agent.Progress{Phase: agent.PhaseNodeRegistration, State: agent.ProgressRunning, Time: time.Now()})
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "join2").Status.NodeBootstrap.Phase).To(Equal(agent.PhaseNodeRegistration))
	}, eventually).Should(Succeed())
	m := &clusterv1.Machine{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "join2"}, m)).To(Succeed())
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: "join2"}
	g.Expect(env.Client.Status().Update(t.Context(), m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsTrue(getHM(g, ns, "join2"), infrav1.HybridMachineNodeJoinedCondition)).To(BeTrue())
	}, eventually).Should(Succeed())
	report(t, "join2", agent.Progress{Phase: agent.PhaseComplete, State: agent.ProgressJoined, Time: time.Now()})
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "join2")
		g.Expect(hm.Status.NodeBootstrap.State).To(Equal(infrav1.NodeBootstrapJoined))
		g.Expect(hm.Status.NodeBootstrap.Phase).To(Equal(agent.PhaseComplete))
	}, eventually).Should(Succeed())
}

// TestEachReportWakesItsMachine: the controller watches the workload
// cluster's progress ConfigMaps, so each report the node writes reaches
// its HybridMachine at once. The tests' reconciler never polls for
// reports (ProgressPoll is an hour); the machine, once provisioned, is
// woken otherwise only by the 15 s look for guest addresses (vcsim's VMs
// report none), so of four reports 5 s apart at most, some fail without
// the watch. The first report, which waits for the VM and the connection
// to the workload cluster, is given the usual time.
func TestEachReportWakesItsMachine(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, disconnect := joiningCluster(t, v)
	defer disconnect()
	machine(t, ns, "join3", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		c := condOf(g, ns, "join3", infrav1.HybridMachineNodeJoinedCondition)
		g.Expect(c.Reason).To(Equal(infrav1.HybridMachineNodeJoinedWaitingForReportReason))
	}, eventually).Should(Succeed())
	report(t, "join3", agent.Progress{Phase: agent.PhasePreflight, State: agent.ProgressRunning, Time: time.Now()})
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "join3")
		g.Expect(hm.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		g.Expect(hm.Status.NodeBootstrap.Phase).To(Equal(agent.PhasePreflight))
	}, eventually).Should(Succeed())
	for _, phase := range []string{agent.PhaseContainerd, agent.PhaseHNS, agent.PhaseDiscovery, agent.PhaseKubelet} {
		report(t, "join3", agent.Progress{Phase: phase, State: agent.ProgressRunning, Time: time.Now()})
		g.Eventually(func(g Gomega) {
			g.Expect(getHM(g, ns, "join3").Status.NodeBootstrap.Phase).To(Equal(phase))
		}, 5*time.Second, 100*time.Millisecond).Should(Succeed(), "the report of phase %s did not reach the HybridMachine within 5 s", phase)
	}
}
