package webhooks

import (
	"context"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/randfill"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/bootstrap/validation"
)

// vocabulary holds strings the validators give meaning to, so that fuzzed
// objects reach past the first check of each field.
var vocabulary = []string{
	"", "Linux", "Windows", "ltsc2019", "ltsc2022", "ltsc2025", "10.0.20348",
	"FullClone", "LinkedClone", "flannel", "calico", "overlay", "l2bridge",
	"containerd", "docker", "Process", "HyperV", "kernelspace", "plain", "base64",
	"10.0.0.0/24", "fd00::/64", "10.0.0.0/33", "10.0.0.1", "C:\\etc\\a.conf",
	"C:\\..\\x", "https://example.com/a", "http://proxy:3128", "Secret",
	"HybridClusterIdentity", "Windows_Server", "None", "latest",
	"enforce-node-allocatable", "system-reserved", "hostname-override",
	"cluster.x-k8s.io/control-plane", "AB:CD", "00000000-1111-2222-3333-444444444444",
	testKey1, "ssh-ed25519 AAAA",
	"node-role.kubernetes.io/worker", "kubernetes.io/os", "node.kubernetes.io/windows-build",
	"node.cloudprovider.kubernetes.io/uninitialized", "cloud-provider", "external", "max-pods",
	"network-plugin", "NoSchedule", "10.0.0.10/24", "10.0.0.255", "127.0.0.1/8", "Standard_D4s_v5",
}

func newFiller(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 3).MaxDepth(8).Funcs(
		func(s *string, c randfill.Continue) {
			if c.Intn(4) == 0 {
				*s = c.String(20)
				return
			}
			*s = vocabulary[c.Intn(len(vocabulary))]
		},
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<36)-1<<30, resource.BinarySI)
		},
	)
}

// FuzzDefaultThenValidate fills every capwin kind with arbitrary content,
// defaults it and validates it: neither may panic, and defaulting twice must
// give what defaulting once gave.
func FuzzDefaultThenValidate(f *testing.F) {
	for _, seed := range [][]byte{{0}, {1, 2, 3}, {2, 200, 7, 9}, {3, 1}, {4, 4, 4, 4, 4}, {5}, {6, 66, 6}} {
		f.Add(seed)
	}
	f.Fuzz(defaultThenValidate)
}

// TestDefaultThenValidateRandomInputs runs FuzzDefaultThenValidate's check
// on random inputs, without the fuzzer's coverage guidance: make test's
// random exploration, which costs no instrumented build of every
// dependency (make fuzz does that). The seed is logged, so that a failure
// can be replayed with CAPWIN_FUZZ_SEED.
func TestDefaultThenValidateRandomInputs(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CAPWIN_FUZZ_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CAPWIN_FUZZ_SEED: %v", err)
		}
	}
	t.Logf("seed %d (CAPWIN_FUZZ_SEED=%d replays it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		data := make([]byte, 1+r.IntN(256))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		defaultThenValidate(t, data)
		if t.Failed() {
			t.Fatalf("input %d of seed %d: %x", i, seed, data)
		}
	}
}

// defaultThenValidate fills the kind data[0] picks with content from the
// rest, defaults it twice and validates it.
func defaultThenValidate(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	ctx := context.Background()
	fill := newFiller(data[1:])
	switch data[0] % 7 {
	case 0:
		m := &infrav1.HybridMachine{}
		fill.Fill(m)
		checkIdempotent(t, m, func(o *infrav1.HybridMachine) { _ = (&HybridMachine{}).Default(ctx, o) })
		_ = validateHybridMachine(m)
		_ = validateMachineSpec(&m.Spec, field.NewPath("spec"), true)
	case 1:
		m := &infrav1.HybridMachineTemplate{}
		fill.Fill(m)
		checkIdempotent(t, m, func(o *infrav1.HybridMachineTemplate) { _ = (&HybridMachineTemplate{}).Default(ctx, o) })
		_ = validateHybridMachineTemplate(m)
	case 2:
		c := &infrav1.HybridCluster{}
		fill.Fill(c)
		_ = validateClusterSpec(&c.Spec, field.NewPath("spec"))
		old := &infrav1.HybridCluster{}
		fill.Fill(old)
		_ = clusterImmutable(&old.Spec, &c.Spec, field.NewPath("spec"))
	case 3:
		c := &infrav1.HybridClusterTemplate{}
		fill.Fill(c)
		_ = validateHybridClusterTemplate(c)
	case 4:
		i := &infrav1.HybridClusterIdentity{}
		fill.Fill(i)
		_ = validateIdentity(i)
	case 5:
		c := &bootstrapv1.WindowsKubeadmConfig{}
		fill.Fill(c)
		checkIdempotent(t, c, func(o *bootstrapv1.WindowsKubeadmConfig) { o.Spec.Default() })
		_ = validation.ValidateConfigSpec(&c.Spec, field.NewPath("spec"))
	case 6:
		c := &bootstrapv1.WindowsKubeadmConfigTemplate{}
		fill.Fill(c)
		checkIdempotent(t, c, func(o *bootstrapv1.WindowsKubeadmConfigTemplate) { o.Spec.Template.Spec.Default() })
		_ = validation.ValidateConfigTemplate(c)
	}
}

// checkIdempotent defaults obj in place and fails if defaulting the result
// again changes it.
func checkIdempotent[T interface{ DeepCopy() T }](t *testing.T, obj T, def func(T)) {
	t.Helper()
	def(obj)
	again := obj.DeepCopy()
	def(again)
	if !reflect.DeepEqual(obj, again) {
		t.Fatalf("defaulting is not idempotent:\nonce:  %+v\ntwice: %+v", obj, again)
	}
}
