package controllers_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/controllers"
	"github.com/capwin/capwin/test/envtest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(envtest.Run(m, &env, envtest.Options{}, func(mgr ctrl.Manager) error {
		return (&controllers.HybridMachineTemplateReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, controller.Options{})
	}))
}

func TestTemplateCapacity(t *testing.T) {
	g := NewWithT(t)
	windows := &infrav1.HybridMachineSpec{
		OS:      infrav1.OSSpec{Type: infrav1.OSWindows, WindowsRelease: infrav1.WindowsServer2022},
		VSphere: &infrav1.VSphereMachineSpec{NumCPUs: 4, MemoryMiB: 8192},
	}
	capacity, info := controllers.TemplateCapacity(windows)
	g.Expect(info).To(Equal(infrav1.NodeInfo{Architecture: "amd64", OperatingSystem: "windows"}))
	g.Expect(capacity.Cpu().Value()).To(Equal(int64(4)))
	g.Expect(capacity.Memory().Equal(resource.MustParse("8Gi"))).To(BeTrue(), "memory %s", capacity.Memory())

	azure := &infrav1.HybridMachineSpec{OS: infrav1.OSSpec{Type: infrav1.OSLinux}, Azure: &infrav1.AzureMachineSpec{VMSize: "Standard_D2s_v5"}}
	capacity, info = controllers.TemplateCapacity(azure)
	g.Expect(capacity).To(BeNil(), "an Azure size's capacity is not known from the spec")
	g.Expect(info.OperatingSystem).To(Equal("linux"))
}

func TestTemplateStatusPublished(t *testing.T) {
	g := NewWithT(t)
	ns, err := env.CreateNamespace(t.Context(), "templates")
	g.Expect(err).NotTo(HaveOccurred())
	tmpl := &infrav1.HybridMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "win", Namespace: ns.Name},
		Spec: infrav1.HybridMachineTemplateSpec{Template: infrav1.HybridMachineTemplateResource{Spec: infrav1.HybridMachineSpec{
			OS: infrav1.OSSpec{Type: infrav1.OSWindows, WindowsRelease: infrav1.WindowsServer2022},
			VSphere: &infrav1.VSphereMachineSpec{Template: "w2022", NumCPUs: 4, MemoryMiB: 8192,
				Network: []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", DHCP4: ptr.To(true)}}},
		}}},
	}
	g.Expect(env.Client.Create(t.Context(), tmpl)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &infrav1.HybridMachineTemplate{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		g.Expect(got.Status.NodeInfo.OperatingSystem).To(Equal("windows"))
		g.Expect(got.Status.Capacity).To(HaveKey(corev1.ResourceCPU))
		g.Expect(got.Status.Capacity.Memory().Equal(resource.MustParse("8Gi"))).To(BeTrue())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}
