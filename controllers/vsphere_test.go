package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
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
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	capisetup "sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/controllers"
	"github.com/capwin/capwin/platform/factory"
	"github.com/capwin/capwin/platform/vsphere"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/builder"
	"github.com/capwin/capwin/test/envtest/apiserver"
)

const eventually = 60 * time.Second

// session is a separate, uncounted session the test works on vCenter with
// as capwin does.
func session(t testing.TB, v *vspheresim.VCenter) *vsphere.Session {
	t.Helper()
	s, err := vsphere.NewSessions().Get(t.Context(), vsphere.Credentials{Server: v.Host, Username: vspheresim.User, Password: vspheresim.Password, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// vmsOf counts the VMs whose instance UUID is one of the given machines',
// by machine.
func vmsOf(t testing.TB, v *vspheresim.VCenter, namespace string, names ...string) map[string]int {
	t.Helper()
	want := map[string]string{}
	for _, n := range names {
		want[vsphere.InstanceUUID(namespace, n)] = n
	}
	counts := map[string]int{}
	for _, vm := range vms(t, v) {
		if n, ok := want[vm.InstanceUUID]; ok {
			counts[n]++
		}
	}
	return counts
}

// vms lists vCenter's VMs.
func vms(t testing.TB, v *vspheresim.VCenter) []vspheresim.VM {
	t.Helper()
	all, err := v.VMs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// vmsNamed counts the VMs whose name match says.
func vmsNamed(t testing.TB, v *vspheresim.VCenter, match func(name string) bool) int {
	t.Helper()
	n := 0
	for _, vm := range vms(t, v) {
		if match(vm.Name) {
			n++
		}
	}
	return n
}

// startControllers runs the HybridCluster and HybridMachine reconcilers in a
// manager of their own, as one controller process; stop ends it.
// Its cache holds the objects of namespace ns only, so that it never works on
// the clusters of earlier tests, whose simulators are gone.
func startControllers(t testing.TB, sessions *vsphere.Sessions, ns string, options ...func(*manager.Options)) (stop func()) {
	t.Helper()
	stop, _ = startControllersPolling(t, sessions, ns, time.Hour, options...)
	return stop
}

// startControllersWithCache is startControllers, returning the ClusterCache
// the HybridMachine reconciler reaches workload clusters through too. The
// reconciler never polls for the nodes' reports: they reach the tests'
// machines through the watch on the workload cluster, or not at all.
func startControllersWithCache(t testing.TB, sessions *vsphere.Sessions, ns string) (stop func(), cc clustercache.ClusterCache) {
	t.Helper()
	return startControllersPolling(t, sessions, ns, time.Hour)
}

// startControllersPolling is startControllersWithCache with the
// HybridMachine reconciler's ProgressPoll (its default when zero).
func startControllersPolling(t testing.TB, sessions *vsphere.Sessions, ns string, progressPoll time.Duration, options ...func(*manager.Options)) (stop func(), cc clustercache.ClusterCache) {
	t.Helper()
	mgr, err := env.NewManager(func(o *manager.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
		for _, option := range options {
			option(o)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := controller.Options{MaxConcurrentReconciles: 10}
	platforms := &factory.Factory{Client: mgr.GetClient(), ControllerNamespace: "capwin-system", VSphere: sessions}
	if err := (&controllers.HybridClusterReconciler{Client: mgr.GetClient(), Platforms: platforms}).SetupWithManager(mgr, opts); err != nil {
		t.Fatal(err)
	}
	secretClient, err := capisetup.CreateSecretCachingClient(mgr)
	if err != nil {
		t.Fatal(err)
	}
	cc, err = clustercache.SetupWithManager(t.Context(), mgr, clustercache.Options{
		SecretClient: secretClient,
		Cache:        controllers.ClusterCacheOptions(),
		Client:       capisetup.ClusterCacheClientOptions("capwin-test", 100, 200),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := apiserver.RetrySoon(cc); err != nil {
		t.Fatal(err)
	}
	if err := (&controllers.HybridMachineReconciler{Client: mgr.GetClient(), Platforms: platforms, ClusterCache: cc, ProgressPoll: progressPoll}).SetupWithManager(mgr, opts); err != nil {
		t.Fatal(err)
	}
	stopManager, err := env.StartManager(t.Context(), mgr)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			if err := stopManager(); err != nil {
				// What still runs, to see which reconcile did not end.
				buf := make([]byte, 4<<20)
				t.Errorf("the manager stopped with: %v; goroutines:\n%s", err, buf[:runtime.Stack(buf, true)])
			}
		}
	}
	t.Cleanup(stop)
	return stop, cc
}

// provisionedCluster makes a namespace whose controllers use sessions, with
// a vSphere cluster on v whose infrastructure is provisioned; stop stops
// the controllers.
func provisionedCluster(t testing.TB, v *vspheresim.VCenter, sessions *vsphere.Sessions) (ns string, stop func()) {
	t.Helper()
	ns = newNamespace(t)
	stop = startControllers(t, sessions, ns)
	cluster(t, v, ns, nil)
	markInfrastructureProvisioned(t, ns)
	return ns, stop
}

func newNamespace(t testing.TB) string {
	t.Helper()
	ns, err := env.CreateNamespace(t.Context(), "vsphere")
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// cluster creates a Cluster with a vSphere HybridCluster and its
// credentials Secret in namespace ns.
func cluster(t testing.TB, v *vspheresim.VCenter, ns string, mutate func(*infrav1.HybridCluster, *corev1.Secret)) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()

	c := builder.Cluster(ns, "win1").Build()
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	secret := builder.CredentialsSecret(ns, "vc-creds", vspheresim.User, vspheresim.Password)
	hc := builder.VSphereCluster(ns, "win1").WithServer(v.Host).WithInsecure().WithOwner(c).Build()
	if mutate != nil {
		mutate(hc, secret)
	}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	g.Expect(env.Client.Create(ctx, hc)).To(Succeed())
}

// markInfrastructureProvisioned does what the Cluster controller does once
// the HybridCluster is provisioned.
func markInfrastructureProvisioned(t testing.TB, ns string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		hc := &infrav1.HybridCluster{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, hc)).To(Succeed())
		g.Expect(hc.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
	c := &clusterv1.Cluster{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, c)).To(Succeed())
	c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(env.Client.Status().Update(t.Context(), c)).To(Succeed())
}

// machine creates a Machine with bootstrap data and its Windows HybridMachine.
func machine(t testing.TB, ns, name, template string) {
	t.Helper()
	machineWithData(t, ns, name, template, builder.BootstrapDataSecret(ns, name+"-bootstrap", "powershell", "#ps1_sysnative\n$NodeConfig = 'e30='\n"))
}

// machineWithData creates a Machine with the bootstrap data Secret data,
// labelled with its cluster as bootstrap providers label it, and its
// Windows HybridMachine.
func machineWithData(t testing.TB, ns, name, template string, data *corev1.Secret) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	data.Labels = map[string]string{clusterv1.ClusterNameLabel: "win1"}
	g.Expect(env.Client.Create(ctx, data)).To(Succeed())
	m := builder.Machine(ns, name, "win1").WithBootstrapDataSecret(data.Name).Build()
	g.Expect(env.Client.Create(ctx, m)).To(Succeed())
	hm := builder.WindowsVSphereMachine(ns, name).WithTemplate(template).WithOwner(m).Build()
	g.Expect(env.Client.Create(ctx, hm)).To(Succeed())
}

func getHM(g Gomega, ns, name string) *infrav1.HybridMachine {
	hm := &infrav1.HybridMachine{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, hm)).To(Succeed())
	return hm
}

func condReason(g Gomega, obj conditions.Getter, t string) string {
	c := conditions.Get(obj, t)
	g.Expect(c).NotTo(BeNil(), "condition %s not set", t)
	return c.Reason
}

func TestHybridClusterConditions(t *testing.T) {
	v := vspheresim.StartT(t)
	tests := []struct {
		name   string
		mutate func(*infrav1.HybridCluster, *corev1.Secret)
		reason string
	}{
		{"available", nil, infrav1.HybridClusterPlatformAvailableReason},
		{"bad credentials", func(_ *infrav1.HybridCluster, s *corev1.Secret) { s.Data["password"] = []byte("wrong") }, infrav1.HybridClusterBadCredentialsReason},
		{"missing secret", func(hc *infrav1.HybridCluster, _ *corev1.Secret) { hc.Spec.VSphere.IdentityRef.Name = "nope" }, infrav1.HybridClusterCredentialsNotFoundReason},
		{"datacenter not found", func(hc *infrav1.HybridCluster, _ *corev1.Secret) { hc.Spec.VSphere.Datacenter = "DC9" }, infrav1.HybridClusterNotFoundReason},
		{"unreachable", func(hc *infrav1.HybridCluster, _ *corev1.Secret) { hc.Spec.VSphere.Server = "127.0.0.1:1" }, infrav1.HybridClusterUnreachableReason},
		{"identity not allowed", func(hc *infrav1.HybridCluster, _ *corev1.Secret) {
			hc.Spec.VSphere.IdentityRef = infrav1.IdentityReference{Kind: infrav1.ClusterIdentity, Name: "closed"}
		}, infrav1.HybridClusterIdentityNotAllowedReason},
	}
	g := NewWithT(t)
	closed := &infrav1.HybridClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "closed"}, Spec: infrav1.HybridClusterIdentitySpec{SecretName: "vc"}}
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(t.Context(), closed))).To(Succeed())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			startControllers(t, vsphere.NewSessions(), ns)
			cluster(t, v, ns, tt.mutate)
			NewWithT(t).Eventually(func(g Gomega) {
				hc := &infrav1.HybridCluster{}
				g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, hc)).To(Succeed())
				g.Expect(condReason(g, hc, infrav1.HybridClusterPlatformAvailableCondition)).To(Equal(tt.reason))
				g.Expect(hc.Status.Initialization.Provisioned != nil && *hc.Status.Initialization.Provisioned).To(Equal(tt.reason == infrav1.HybridClusterPlatformAvailableReason))
			}, eventually).Should(Succeed())
		})
	}
}

func TestHybridMachineLifecycle(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns := newNamespace(t)
	var mu sync.Mutex
	var lines []string
	startControllers(t, vsphere.NewSessions(), ns, func(o *manager.Options) {
		o.Logger = funcr.New(func(_, args string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, args)
		}, funcr.Options{})
	})
	cluster(t, v, ns, nil)
	machine(t, ns, "m1", "DC0_H0_VM0")

	// Before the cluster's infrastructure is provisioned, nothing happens.
	g.Eventually(func(g Gomega) {
		g.Expect(condReason(g, getHM(g, ns, "m1"), infrav1.HybridMachineVMProvisionedCondition)).
			To(Equal(infrav1.HybridMachineWaitingForClusterInfrastructureReason))
	}, eventually).Should(Succeed())
	g.Expect(vmsOf(t, v, ns, "m1")["m1"]).To(BeZero())

	markInfrastructureProvisioned(t, ns)
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "m1")
		g.Expect(hm.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		g.Expect(hm.Spec.ProviderID).To(HavePrefix("vsphere://"))
		g.Expect(hm.Status.Addresses).To(ContainElement(HaveField("Type", clusterv1.MachineHostName)))
	}, eventually).Should(Succeed())
	g.Expect(vmsOf(t, v, ns, "m1")["m1"]).To(Equal(1))

	// The node joins: the user data (with its token) leaves the VM.
	m := &clusterv1.Machine{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "m1"}, m)).To(Succeed())
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: "m1"}
	g.Expect(env.Client.Status().Update(t.Context(), m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsTrue(getHM(g, ns, "m1"), infrav1.HybridMachineBootstrapDataClearedCondition)).To(BeTrue())
	}, eventually).Should(Succeed())
	cleared, err := session(t, v).UserDataCleared(t.Context(), vsphere.Machine{Namespace: ns, Name: "m1", Datacenter: "DC0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cleared).To(BeTrue())

	// Everything is deleted at once, as kubectl delete -f does: the
	// HybridCluster stays until its machine has deleted its VM with its
	// credentials, then goes too.
	hc := &infrav1.HybridCluster{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, hc)).To(Succeed())
	g.Expect(env.Client.Delete(t.Context(), hc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &infrav1.HybridCluster{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, got)).To(Succeed())
		g.Expect(condReason(g, got, infrav1.HybridClusterPlatformAvailableCondition)).To(Equal(infrav1.HybridClusterDeletingReason))
	}, eventually).Should(Succeed())
	g.Expect(env.Client.Delete(t.Context(), getHM(g, ns, "m1"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "m1"}, &infrav1.HybridMachine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		err = env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, &infrav1.HybridCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, eventually).Should(Succeed())
	g.Expect(vmsOf(t, v, ns, "m1")["m1"]).To(BeZero())

	mu.Lock()
	defer mu.Unlock()
	checkOperationLines(t, lines, "m1")
}

// checkOperationLines: the machine's log says once that each platform
// operation started and once that it ended, in turn (a clone and a delete
// among them), once that the VM runs and once that it was deleted.
func checkOperationLines(t *testing.T, lines []string, machine string) {
	t.Helper()
	var seq []string
	counts := map[string]int{}
	msg := regexp.MustCompile(`"msg"="(Platform operation [a-z ]+)"`)
	op := regexp.MustCompile(`"operation"="([A-Za-z]+)"`)
	for _, l := range lines {
		if !strings.Contains(l, `"HybridMachine"={"name"="`+machine+`"`) {
			continue
		}
		if m, o := msg.FindStringSubmatch(l), op.FindStringSubmatch(l); m != nil && o != nil {
			seq = append(seq, m[1]+" "+o[1])
		}
		for _, msg := range []string{`"msg"="The VM runs"`, `"msg"="Deleted the VM"`} {
			if strings.Contains(l, msg) {
				counts[msg]++
			}
		}
	}
	var open string
	for _, e := range seq {
		switch {
		case strings.HasPrefix(e, "Platform operation started "):
			if open != "" {
				t.Errorf("%s while %s was not said to end: %q", e, open, seq)
			}
			open = strings.TrimPrefix(e, "Platform operation started ")
		default:
			if typ := e[strings.LastIndex(e, " ")+1:]; typ != open {
				t.Errorf("%q ends an operation that was not started (%q open): %q", e, open, seq)
			}
			open = ""
		}
	}
	for _, want := range []string{"Platform operation started Create", "Platform operation ended Create", "Platform operation started Delete", "Platform operation ended Delete"} {
		if n := strings.Count(strings.Join(seq, "\n")+"\n", want+"\n"); n != 1 {
			t.Errorf("%q logged %d times, want once: %q", want, n, seq)
		}
	}
	for msg, n := range counts {
		if n != 1 {
			t.Errorf("%s logged %d times, want once", msg, n)
		}
	}
	if len(counts) != 2 {
		t.Errorf("the VM's run and deletion were not both logged: %v", counts)
	}
}

func TestVMAlreadyDeleted(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	machine(t, ns, "m2", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "m2").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())

	// Someone destroys the VM behind capwin's back.
	// The controller powers on a VM it finds off, so between the power-off
	// and the destroy it can win the race, and the destroy then fails with
	// InvalidPowerState: the other party tries again, as a person would.
	s := session(t, v)
	g.Eventually(func(g Gomega) bool {
		gone, op, err := s.Delete(t.Context(), vsphere.Machine{Namespace: ns, Name: "m2", Datacenter: "DC0"})
		g.Expect(err).NotTo(HaveOccurred())
		if !op.IsZero() {
			_ = v.WaitTask(t.Context(), op.ID) // a lost race is tried again
		}
		return gone
	}, eventually).Should(BeTrue())
	// It is reported, not silently re-created with a new provider ID.
	m := &clusterv1.Machine{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "m2"}, m)).To(Succeed())
	m.Labels = map[string]string{"poke": "1"}
	g.Expect(env.Client.Update(t.Context(), m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condReason(g, getHM(g, ns, "m2"), infrav1.HybridMachineVMProvisionedCondition)).To(Equal(infrav1.HybridMachineVMGoneReason))
	}, eventually).Should(Succeed())
	g.Expect(vmsOf(t, v, ns, "m2")["m2"]).To(BeZero())

	g.Expect(env.Client.Delete(t.Context(), getHM(g, ns, "m2"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "m2"}, &infrav1.HybridMachine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a machine whose VM is already gone is deleted")
	}, eventually).Should(Succeed())
}

func TestTemplateNotFound(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	machine(t, ns, "m3", "no-such-template")
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "m3")
		g.Expect(condReason(g, hm, infrav1.HybridMachineVMProvisionedCondition)).To(Equal(infrav1.HybridMachineNotFoundReason))
		g.Expect(conditions.Get(hm, infrav1.HybridMachineVMProvisionedCondition).Message).To(ContainSubstring("template no-such-template"))
	}, eventually).Should(Succeed())
}

// TestBootstrapDataFormatMismatchMakesNoVM: a Windows machine given the
// kubeadm bootstrap provider's cloud-config says so and gets no VM; once
// the Secret holds capwin's payload, the VM is made.
func TestBootstrapDataFormatMismatchMakesNoVM(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	data := builder.BootstrapDataSecret(ns, "cc-bootstrap", "cloud-config", "#cloud-config\nruncmd: [kubeadm join]\n")
	machineWithData(t, ns, "cc", "DC0_H0_VM0", data)
	g.Eventually(func(g Gomega) {
		c := conditions.Get(getHM(g, ns, "cc"), infrav1.HybridMachineVMProvisionedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(infrav1.HybridMachineBootstrapDataFormatMismatchReason))
		g.Expect(c.Message).To(And(ContainSubstring(`format "cloud-config"`), ContainSubstring("Windows machine"), ContainSubstring(`format "powershell"`)))
	}, eventually).Should(Succeed())
	g.Expect(vmsOf(t, v, ns, "cc")["cc"]).To(BeZero())
	asked, err := v.CloneRequests(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asked["cc"]).To(BeZero(), "no clone is asked for")

	// Corrected, the data is read again (every 30 s, or at once on a
	// Machine event, as here) and the VM is made.
	g.Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(data), data)).To(Succeed())
	data.Data = map[string][]byte{"format": []byte("powershell"), "value": []byte("#ps1_sysnative\n")}
	g.Expect(env.Client.Update(t.Context(), data)).To(Succeed())
	m := &clusterv1.Machine{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cc"}, m)).To(Succeed())
	m.Labels = map[string]string{"poke": "1"}
	g.Expect(env.Client.Update(t.Context(), m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "cc").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
}

// TestRestartMidClone: the controller stops while a clone runs; a new one
// (new sessions, new caches) resumes and makes no second VM.
func TestRestartMidClone(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	vspheresim.DelayTasks(t, map[string]int{"CloneVm": 3000}) // vcsim delays a task by its info.name

	ns, stop := provisionedCluster(t, v, vsphere.NewSessions())
	machine(t, ns, "m4", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "m4").Status.Operation.Type).To(Equal(infrav1.MachineOperationCreate))
	}, eventually).Should(Succeed())
	stop()

	startControllers(t, vsphere.NewSessions(), ns)
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "m4").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
	g.Expect(vmsOf(t, v, ns, "m4")["m4"]).To(Equal(1))
}

// TestFaultInjectionFiftyMachines: 5 % of Clone and PowerOn calls fail; all
// 50 machines end provisioned with one VM each, through at most 2 sessions.
func TestFaultInjectionFiftyMachines(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	v.FailCalls(0.05, "CloneVM_Task", "PowerOnVM_Task")
	sessions := vsphere.NewSessions()
	ns, _ := provisionedCluster(t, v, sessions)
	var names []string
	for i := range 50 {
		names = append(names, fmt.Sprintf("f%02d", i))
		machine(t, ns, names[i], "DC0_H0_VM0")
	}
	g.Eventually(func(g Gomega) {
		list := &infrav1.HybridMachineList{}
		g.Expect(env.Client.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
		provisioned := 0
		for _, hm := range list.Items {
			if ptr.Deref(hm.Status.Initialization.Provisioned, false) {
				provisioned++
			}
		}
		g.Expect(provisioned).To(Equal(50))
	}, 3*time.Minute, time.Second).Should(Succeed())

	counts := vmsOf(t, v, ns, names...)
	for _, n := range names {
		g.Expect(counts[n]).To(Equal(1), "machine %s has %d VMs", n, counts[n])
	}
	g.Expect(vmsNamed(t, v, func(n string) bool { return strings.HasPrefix(n, "f") })).To(Equal(50), "no orphaned or duplicate VM")
	g.Expect(sessions.Opened()).To(BeNumerically("<=", 2))
}

// TestOneClonePerMachineWhileMachinesChange: Machine updates wake the
// reconciler at any moment, also just after it recorded a clone and before
// its cache holds that record; vCenter is asked for one clone per machine
// all the same.
func TestOneClonePerMachineWhileMachinesChange(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	vspheresim.DelayTasks(t, map[string]int{"CloneVm": 1000, "LockHandoff": 0})
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("c%02d", i))
	}
	done := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for _, n := range names {
				m := &clusterv1.Machine{}
				if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: n}, m); err != nil {
					continue
				}
				p := client.MergeFrom(m.DeepCopy())
				m.Annotations = map[string]string{"churn": fmt.Sprint(i)}
				_ = env.Client.Patch(t.Context(), m, p)
			}
		}
	}()
	for _, n := range names {
		machine(t, ns, n, "DC0_H0_VM0")
	}
	g.Eventually(func(g Gomega) {
		for _, n := range names {
			g.Expect(getHM(g, ns, n).Status.Initialization.Provisioned).To(Equal(ptr.To(true)), n)
		}
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
	close(done)
	<-churned
	asked, err := v.CloneRequests(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	for _, n := range names {
		g.Expect(asked[n]).To(Equal(1), "clones asked for machine %s", n)
	}
}

// TestTaskFailure: a clone task that fails (its VM name is taken by a VM
// capwin did not make) is reported, naming that VM, and retried by looking
// at the name, not by cloning again; the other VM is left alone.
func TestTaskFailure(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	g.Expect(v.CloneVM(t.Context(), "/DC0/vm/DC0_H0_VM0", "/DC0/vm", "taken")).To(Succeed())

	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	machine(t, ns, "taken", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		hm := getHM(g, ns, "taken")
		c := conditions.Get(hm, infrav1.HybridMachineVMProvisionedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(infrav1.HybridMachineOperationFailedReason))
		g.Expect(c.Message).To(ContainSubstring("has the name taken and instance UUID"))
	}, eventually).Should(Succeed())
	g.Expect(vmsNamed(t, v, func(n string) bool { return n == "taken" })).To(Equal(1), "the VM capwin did not make is untouched")
	// Retried by reading the name, not by cloning again and again.
	time.Sleep(3 * time.Second)
	asked, err := v.CloneRequests(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asked["taken"]).To(BeNumerically("<=", 2), "clones asked for a name another VM has")
}

// TestDeleteMidClone: a machine deleted while its clone runs leaves no VM.
// vcsim makes the VM findable before the delayed clone task ends, so this
// does not reproduce a VM that vCenter has not registered yet; the wait for
// the recorded task in Delete covers that case without a test here.
func TestDeleteMidClone(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	vspheresim.DelayTasks(t, map[string]int{"CloneVm": 2000}) // vcsim delays a task by its info.name
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	machine(t, ns, "m5", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "m5").Status.Operation.Type).To(Equal(infrav1.MachineOperationCreate))
	}, eventually).Should(Succeed())
	g.Expect(env.Client.Delete(t.Context(), getHM(g, ns, "m5"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "m5"}, &infrav1.HybridMachine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, eventually).Should(Succeed())
	// Watch past the end of the clone (2 s in vcsim).
	g.Consistently(func(g Gomega) {
		g.Expect(vmsOf(t, v, ns, "m5")["m5"]).To(BeZero(), "the VM whose clone was in flight is deleted too")
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
}

// TestPausedClusterMakesNoVM: while the Cluster is paused, a machine gets the
// Paused condition and no VM.
func TestPausedClusterMakesNoVM(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _ := provisionedCluster(t, v, vsphere.NewSessions())
	c := &clusterv1.Cluster{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, c)).To(Succeed())
	c.Spec.Paused = ptr.To(true)
	g.Expect(env.Client.Update(t.Context(), c)).To(Succeed())

	machine(t, ns, "p1", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsTrue(getHM(g, ns, "p1"), clusterv1.PausedCondition)).To(BeTrue())
	}, eventually).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(vmsOf(t, v, ns, "p1")["p1"]).To(BeZero())
	}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

	// Unpaused, it goes on.
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, c)).To(Succeed())
	c.Spec.Paused = nil
	g.Expect(env.Client.Update(t.Context(), c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, "p1").Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
}

// TestHybridClusterMadeUnderAPausedClusterGoesOnWhenUnpaused: a
// HybridCluster created while its Cluster is paused, as clusterctl move
// creates it in the target management cluster, is provisioned once the
// Cluster is unpaused, though the HybridCluster itself does not change.
func TestHybridClusterMadeUnderAPausedClusterGoesOnWhenUnpaused(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns := newNamespace(t)
	startControllers(t, vsphere.NewSessions(), ns)
	c := builder.Cluster(ns, "win1").Build()
	c.Spec.Paused = ptr.To(true)
	g.Expect(env.Client.Create(t.Context(), c)).To(Succeed())
	g.Expect(env.Client.Create(t.Context(), builder.CredentialsSecret(ns, "vc-creds", vspheresim.User, vspheresim.Password))).To(Succeed())
	g.Expect(env.Client.Create(t.Context(), builder.VSphereCluster(ns, "win1").WithServer(v.Host).WithInsecure().WithOwner(c).Build())).To(Succeed())
	getHC := func(g Gomega) *infrav1.HybridCluster {
		hc := &infrav1.HybridCluster{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, hc)).To(Succeed())
		return hc
	}
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsTrue(getHC(g), clusterv1.PausedCondition)).To(BeTrue())
	}, eventually).Should(Succeed())
	g.Expect(getHC(g).Status.Initialization.Provisioned).To(BeNil())

	g.Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(c), c)).To(Succeed())
	c.Spec.Paused = nil
	g.Expect(env.Client.Update(t.Context(), c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		hc := getHC(g)
		g.Expect(conditions.IsFalse(hc, clusterv1.PausedCondition)).To(BeTrue())
		g.Expect(hc.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
}

// TestAzureClusterNamesTheKeysItLacks: an Azure HybridCluster whose Secret
// holds a vCenter login says which keys an Azure login needs.
func TestAzureClusterNamesTheKeysItLacks(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns := newNamespace(t)
	startControllers(t, vsphere.NewSessions(), ns)
	cluster(t, v, ns, func(hc *infrav1.HybridCluster, _ *corev1.Secret) {
		hc.Spec.VSphere = nil
		hc.Spec.Azure = &infrav1.AzureClusterSpec{
			SubscriptionID: "00000000-1111-2222-3333-444444444444", Location: "westeurope", ResourceGroup: "rg",
			Network: infrav1.AzureNetworkSpec{VNetName: "vnet", CIDRBlocks: []string{"10.1.0.0/16"}, Subnets: []infrav1.AzureSubnet{
				{Name: "cp", Role: infrav1.SubnetControlPlane, CIDRBlock: "10.1.0.0/24"}, {Name: "n", Role: infrav1.SubnetNode, CIDRBlock: "10.1.1.0/24"}}},
			IdentityRef: infrav1.IdentityReference{Kind: infrav1.SecretIdentity, Name: "vc-creds"},
		}
	})
	g.Eventually(func(g Gomega) {
		hc := &infrav1.HybridCluster{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, hc)).To(Succeed())
		g.Expect(condReason(g, hc, infrav1.HybridClusterPlatformAvailableCondition)).To(Equal(infrav1.HybridClusterCredentialsNotFoundReason))
		g.Expect(conditions.Get(hc, infrav1.HybridClusterPlatformAvailableCondition).Message).To(ContainSubstring("must have the keys tenantID and clientID and clientSecret"))
		g.Expect(hc.Status.Initialization.Provisioned).To(BeNil())
	}, eventually).Should(Succeed())
}

// TestVCenterTimeoutReported: a vCenter call that gets no answer fails
// within the call timeout and the HybridMachine's condition names it.
func TestVCenterTimeoutReported(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	sessions := vsphere.NewSessions()
	sessions.CallTimeout = time.Second
	// A vCenter that stopped answering clones. (That a clone vCenter did
	// start without answering is not cloned twice is platform/vsphere's
	// TestCallTimeoutMidClone.)
	sessions.Transport = vspheresim.HoldCalls("CloneVM_Task")
	ns, _ := provisionedCluster(t, v, sessions)
	machine(t, ns, "slow", "DC0_H0_VM0")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(getHM(g, ns, "slow"), infrav1.HybridMachineVMProvisionedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(infrav1.HybridMachinePlatformUnavailableReason))
		g.Expect(c.Message).To(ContainSubstring("vCenter did not answer CloneVM_Task within 1s"))
	}, eventually).Should(Succeed())
}

// TestVCenterFaultsAndOutageAtScale: while 100 machines are made, 5 % of
// every call to vCenter fails (any SOAP method), and once a third are
// provisioned vCenter is unreachable for two minutes (its address refuses
// connections). While it is down the machines not yet provisioned say
// PlatformUnavailable; once it is back every machine is provisioned with
// exactly one VM, none is left over, and the one session lasted through.
func TestVCenterFaultsAndOutageAtScale(t *testing.T) {
	const machines, outage = 100, 2 * time.Minute
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	sessions := vsphere.NewSessions()
	ns, _ := provisionedCluster(t, v, sessions)
	v.FailCalls(0.05, "*")
	var names []string
	for i := range machines {
		names = append(names, fmt.Sprintf("o%02d", i))
		machine(t, ns, names[i], "DC0_H0_VM0")
	}
	provisioned := func(g Gomega) (done int, waiting []*infrav1.HybridMachine) {
		list := &infrav1.HybridMachineList{}
		g.Expect(env.Client.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			if ptr.Deref(list.Items[i].Status.Initialization.Provisioned, false) {
				done++
			} else {
				waiting = append(waiting, &list.Items[i])
			}
		}
		return done, waiting
	}
	g.Eventually(func(g Gomega) {
		done, _ := provisioned(g)
		g.Expect(done).To(BeNumerically(">=", machines/3))
	}, 3*time.Minute, 100*time.Millisecond).Should(Succeed())

	g.Expect(v.SetReachable(false)).To(Succeed())
	back := time.Now().Add(outage)
	g.Eventually(func(g Gomega) {
		_, waiting := provisioned(g)
		g.Expect(waiting).NotTo(BeEmpty(), "every machine was provisioned before vCenter went down")
		for _, hm := range waiting {
			c := conditions.Get(hm, infrav1.HybridMachineVMProvisionedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(infrav1.HybridMachinePlatformUnavailableReason), "machine %s while vCenter is down: %s", hm.Name, c.Message)
		}
	}, outage/2, time.Second).Should(Succeed())
	done, _ := provisioned(g)
	t.Logf("%d of %d machines provisioned when vCenter went down", done, machines)
	time.Sleep(time.Until(back))
	g.Expect(v.SetReachable(true)).To(Succeed())

	g.Eventually(func(g Gomega) {
		done, _ := provisioned(g)
		g.Expect(done).To(Equal(machines))
	}, 5*time.Minute, time.Second).Should(Succeed())
	injected := v.Model.Service.GetFaultStats()["total_injections"]
	v.Model.Service.ClearFaultRules() // the checks below call vCenter too
	t.Logf("%v calls failed by injection", injected)
	counts := vmsOf(t, v, ns, names...)
	for _, n := range names {
		g.Expect(counts[n]).To(Equal(1), "machine %s has %d VMs", n, counts[n])
	}
	g.Expect(vmsNamed(t, v, func(n string) bool { return strings.HasPrefix(n, "o") })).To(Equal(machines), "no orphaned or duplicate VM")
	g.Expect(sessions.Opened()).To(BeNumerically("<=", 2))
}
