package main

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	capwinsetup "github.com/capwin/capwin/setup"
	"github.com/capwin/capwin/test/envtest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(envtest.Run(m, &env, envtest.Options{}, nil))
}

func TestParseFlags(t *testing.T) {
	g := NewWithT(t)
	o, err := parseFlags(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.providers).To(ConsistOf(capwinsetup.ProviderInfrastructure, capwinsetup.ProviderBootstrap))
	o, err = parseFlags([]string{"--providers=bootstrap"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.providers).To(Equal([]string{capwinsetup.ProviderBootstrap}))
	_, err = parseFlags([]string{"--v=2"})
	g.Expect(err).NotTo(HaveOccurred(), "the logging flags Tilt and users pass are known")
	_, err = parseFlags([]string{"--providers=control-plane"})
	g.Expect(err).To(MatchError(ContainSubstring(`"control-plane" is not infrastructure or bootstrap`)))
}

// TestManagerRunsChosenProviders starts the manager as the binary does and
// sees the infrastructure reconcilers act only when that provider is chosen.
func TestManagerRunsChosenProviders(t *testing.T) {
	for _, tt := range []struct {
		providers []string
		acts      bool
	}{
		{[]string{capwinsetup.ProviderInfrastructure, capwinsetup.ProviderBootstrap}, true},
		{[]string{capwinsetup.ProviderBootstrap}, false},
	} {
		t.Run(tt.providers[0], func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithCancel(t.Context())
			o, err := parseFlags([]string{"--metrics-bind-address=0", "--health-addr=0", "--webhook-port=0", "--namespace=capwin-system"})
			g.Expect(err).NotTo(HaveOccurred())
			o.providers = tt.providers
			o.skipNameValidation = true
			mgr, err := newManager(ctx, env.Config, o)
			g.Expect(err).NotTo(HaveOccurred())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			defer func() { cancel(); g.Expect(<-done).To(Succeed()) }()

			ns, err := env.CreateNamespace(ctx, "manager")
			g.Expect(err).NotTo(HaveOccurred())
			tmpl := &infrav1.HybridMachineTemplate{
				ObjectMeta: metav1.ObjectMeta{Name: "win", Namespace: ns.Name},
				Spec: infrav1.HybridMachineTemplateSpec{Template: infrav1.HybridMachineTemplateResource{Spec: infrav1.HybridMachineSpec{
					OS: infrav1.OSSpec{Type: infrav1.OSWindows, WindowsRelease: infrav1.WindowsServer2022},
					VSphere: &infrav1.VSphereMachineSpec{Template: "w", NumCPUs: 2, MemoryMiB: 4096,
						Network: []infrav1.VSphereNetworkDevice{{NetworkName: "n", DHCP4: ptr.To(true)}}},
				}}},
			}
			g.Expect(env.Client.Create(ctx, tmpl)).To(Succeed())
			published := func(g Gomega) bool {
				got := &infrav1.HybridMachineTemplate{}
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
				return got.Status.NodeInfo.OperatingSystem == "windows"
			}
			if tt.acts {
				g.Eventually(published, 30*time.Second).Should(BeTrue())
			} else {
				g.Consistently(published, 2*time.Second).Should(BeFalse())
			}
		})
	}
}
