package azure_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
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

const (
	subscription = "00000000-1111-2222-3333-444444444444"
	group        = "capwin-rg"
)

// testEnv is a simulated Azure with the cluster's resource group and
// network, and an Azure HybridCluster that uses them.
type testEnv struct {
	cloud   *azuresim.Cloud
	cluster *infrav1.HybridCluster
	secret  *corev1.Secret
	opts    *arm.ClientOptions
}

func newEnv(t testing.TB, o azuresim.Options) *testEnv {
	t.Helper()
	// capwin's retry settings with a short backoff, so that the tests do
	// not wait out the SDK's one-second delays; what comes back to capwin
	// (a Retry-After over MaxRetryDelay) is the same.
	retry := azure.RetryOptions()
	retry.RetryDelay = 5 * time.Millisecond
	return newEnvRetry(t, o, retry)
}

func newEnvRetry(t testing.TB, o azuresim.Options, retry policy.RetryOptions) *testEnv {
	t.Helper()
	o.SubscriptionID = subscription
	cloud := azuresim.New(o)
	opts := cloud.ClientOptions()
	opts.Retry = retry
	e := &testEnv{cloud: cloud, opts: opts}
	ctx := t.Context()
	groups, err := armresources.NewResourceGroupsClient(subscription, azuresim.Credential(), opts)
	must(t, err)
	_, err = groups.CreateOrUpdate(ctx, group, armresources.ResourceGroup{Location: ptr.To("westeurope")}, nil)
	must(t, err)
	vnets, err := armnetwork.NewVirtualNetworksClient(subscription, azuresim.Credential(), opts)
	must(t, err)
	poller, err := vnets.BeginCreateOrUpdate(ctx, group, "vnet", armnetwork.VirtualNetwork{
		Location: ptr.To("westeurope"),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{ptr.To("10.1.0.0/16")}},
			Subnets: []*armnetwork.Subnet{
				{Name: ptr.To("cp"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: ptr.To("10.1.0.0/24")}},
				{Name: ptr.To("nodes"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: ptr.To("10.1.1.0/24")}},
			},
		},
	}, nil)
	must(t, err)
	finish(t, poller)
	e.cluster = &infrav1.HybridCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hc"},
		Spec: infrav1.HybridClusterSpec{Azure: &infrav1.AzureClusterSpec{
			SubscriptionID: subscription, Location: "westeurope", ResourceGroup: group,
			Network: infrav1.AzureNetworkSpec{VNetName: "vnet", CIDRBlocks: []string{"10.1.0.0/16"}, Subnets: []infrav1.AzureSubnet{
				{Name: "cp", Role: infrav1.SubnetControlPlane, CIDRBlock: "10.1.0.0/24"},
				{Name: "nodes", Role: infrav1.SubnetNode, CIDRBlock: "10.1.1.0/24"},
			}},
			IdentityRef: infrav1.IdentityReference{Kind: infrav1.SecretIdentity, Name: "azure"},
		}},
	}
	e.secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "azure"}, Data: map[string][]byte{
		"tenantID": []byte("tenant"), "clientID": []byte("client"), "clientSecret": []byte("secret"),
	}}
	return e
}

// platform returns a Platform with clients of its own, as a restarted
// controller would have, and no write limit: the limit is the
// benchmark's to measure, and here it would only slow the tests down.
func (e *testEnv) platform(t testing.TB) *azure.Platform {
	t.Helper()
	return e.platformWith(t, azure.Options{WritesPerSecond: -1})
}

// platformWith is platform with the options o, sent to the simulated cloud.
func (e *testEnv) platformWith(t testing.TB, o azure.Options) *azure.Platform {
	t.Helper()
	o.ClientOptions = e.opts
	o.NewCredential = func(azure.Credentials) (azcore.TokenCredential, error) { return azuresim.Credential(), nil }
	p, err := azure.New(azure.NewClients(o), e.secret, e.cluster)
	must(t, err)
	return p
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// finish polls a poller of the test's own setup until it ends.
func finish[T any](t testing.TB, p *runtime.Poller[T]) {
	t.Helper()
	for !p.Done() {
		resp, err := p.Poll(t.Context())
		must(t, err)
		_ = resp.Body.Close()
	}
	_, err := p.Result(t.Context())
	must(t, err)
}

func windowsMachine(name string) *platform.Machine {
	hm := &infrav1.HybridMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
		Spec: infrav1.HybridMachineSpec{
			OS: infrav1.OSSpec{Type: infrav1.OSWindows},
			Azure: &infrav1.AzureMachineSpec{
				VMSize:      "Standard_D4s_v5",
				Image:       infrav1.AzureImage{ComputeGallery: &infrav1.AzureComputeGalleryImage{Gallery: "capwin", Name: "capwin-windows-2022", Version: "1.36.3"}},
				LicenseType: infrav1.LicenseWindowsServer,
			},
		},
	}
	return &platform.Machine{HybridMachine: hm, ComputerName: strings.ToUpper(name), BootstrapData: []byte("#ps1_sysnative\r\n& capwin-node join " + name)}
}

// ensure calls EnsureMachine as the reconciler does, recording the
// operation, until the VM exists with none in flight; steps counts calls.
func ensure(t *testing.T, p *azure.Platform, m *platform.Machine) (platform.MachineState, int) {
	t.Helper()
	for steps := 1; steps <= 20; steps++ {
		st, err := p.EnsureMachine(t.Context(), m)
		m.HybridMachine.Status.Operation = st.Operation
		if err != nil {
			t.Fatalf("step %d: %v", steps, err)
		}
		if st.Operation.IsZero() && st.Exists {
			m.HybridMachine.Status.Initialization.Provisioned = ptr.To(true)
			return st, steps
		}
	}
	t.Fatal("the VM was not made in 20 steps")
	return platform.MachineState{}, 0
}

func deleteMachine(t *testing.T, p *azure.Platform, m *platform.Machine) int {
	t.Helper()
	m.HybridMachine.DeletionTimestamp = ptr.To(metav1.Now())
	for steps := 1; steps <= 20; steps++ {
		gone, op, err := p.DeleteMachine(t.Context(), m)
		m.HybridMachine.Status.Operation = op
		if err != nil {
			t.Fatalf("step %d: %v", steps, err)
		}
		if gone {
			return steps
		}
	}
	t.Fatal("the VM was not deleted in 20 steps")
	return 0
}

// leftovers lists the VMs, NICs and disks in the cloud.
func leftovers(c *azuresim.Cloud) []string {
	var out []string
	for _, vm := range c.VirtualMachines() {
		out = append(out, "VM "+*vm.Name)
	}
	for _, nic := range c.Interfaces() {
		out = append(out, "NIC "+*nic.Name)
	}
	for _, d := range c.Disks() {
		out = append(out, "disk "+*d.Name)
	}
	return out
}

// TestCreateObserveDelete makes a Windows machine's NIC and VM, one
// operation per call, checks what Azure was asked for, and deletes it with
// nothing left.
func TestCreateObserveDelete(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 2})
	p := e.platform(t)
	m := windowsMachine("win-a")
	m.FailureDomain = "2"
	st, steps := ensure(t, p, m)
	// The NIC's begin and two polls, the second of which ends it and
	// begins the VM; the VM's two polls.
	if steps != 5 {
		t.Errorf("made in %d steps, want 5 (one operation call per step, two polls per operation)", steps)
	}
	wantID := "azure:///subscriptions/" + subscription + "/resourceGroups/" + group + "/providers/Microsoft.Compute/virtualMachines/win-a"
	if st.ProviderID != wantID {
		t.Errorf("provider ID %q, want %q", st.ProviderID, wantID)
	}
	if !st.Running || len(st.Addresses) != 1 || st.Addresses[0] != "10.1.1.4" {
		t.Errorf("running %v, addresses %v; want running on 10.1.1.4", st.Running, st.Addresses)
	}
	vms := e.cloud.VirtualMachines()
	if len(vms) != 1 {
		t.Fatalf("%d VMs, want 1", len(vms))
	}
	vm := vms[0]
	os := vm.Properties.OSProfile
	if got := ptr.Deref(os.ComputerName, ""); got != "WIN-A" {
		t.Errorf("computer name %q, want WIN-A", got)
	}
	if got := ptr.Deref(vm.Properties.LicenseType, ""); got != "Windows_Server" {
		t.Errorf("license type %q, want Windows_Server (Azure Hybrid Benefit)", got)
	}
	if len(vm.Zones) != 1 || *vm.Zones[0] != "2" {
		t.Errorf("zones %v, want [2]", vm.Zones)
	}
	if got := ptr.Deref(vm.Tags[azure.OwnerTag], ""); got != "ns/win-a" {
		t.Errorf("owner tag %q", got)
	}
	nics := vm.Properties.NetworkProfile.NetworkInterfaces
	if len(nics) != 1 || string(ptr.Deref(nics[0].Properties.DeleteOption, "")) != "Delete" {
		t.Errorf("the NIC is not deleted with the VM: %+v", nics)
	}
	if got := string(ptr.Deref(vm.Properties.StorageProfile.OSDisk.DeleteOption, "")); got != "Delete" {
		t.Errorf("OS disk delete option %q, want Delete", got)
	}

	// Observing a running VM starts nothing.
	st, err := p.EnsureMachine(t.Context(), m)
	must(t, err)
	if !st.Operation.IsZero() || !st.Exists {
		t.Errorf("a second look started %v", st.Operation)
	}
	cleared, err := p.BootstrapDataCleared(t.Context(), m)
	must(t, err)
	if !cleared || !strings.Contains(p.KeptBootstrapData(), "customData") {
		t.Errorf("cleared %v, kept %q", cleared, p.KeptBootstrapData())
	}

	deleteMachine(t, p, m)
	if left := leftovers(e.cloud); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestCustomDataIsTheBootstrapData: the VM is made with the bootstrap data,
// as the guest simulator and cloudbase-init read it.
func TestCustomDataIsTheBootstrapData(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	var mu sync.Mutex
	var got []string
	e.cloud.OnVMCreated(func(vm armcompute.VirtualMachine) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ptr.Deref(vm.Properties.OSProfile.CustomData, ""))
	})
	p := e.platform(t)
	m := windowsMachine("win-b")
	ensure(t, p, m)
	want := base64.StdEncoding.EncodeToString(m.BootstrapData)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != want {
		t.Errorf("the created VM's customData: %v, want [%s]", got, want)
	}
}

// TestRestartMidCreate: a new controller (new clients, same Azure) picks up
// the recorded resume token and ends the same create: one VM, and nothing
// left after the delete.
func TestRestartMidCreate(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 3})
	m := windowsMachine("win-c")
	p := e.platform(t)
	for m.HybridMachine.Status.Operation.Type != infrav1.MachineOperationCreate {
		st, err := p.EnsureMachine(t.Context(), m)
		must(t, err)
		m.HybridMachine.Status.Operation = st.Operation
	}
	// One poll of the VM create, then the restart.
	st, err := p.EnsureMachine(t.Context(), m)
	must(t, err)
	m.HybridMachine.Status.Operation = st.Operation
	if st.Operation.Type != infrav1.MachineOperationCreate {
		t.Fatalf("the create ended after one poll of three: %+v", st)
	}
	ensure(t, e.platform(t), m)
	if n := len(e.cloud.VirtualMachines()); n != 1 {
		t.Errorf("%d VMs after a restart mid-create, want 1", n)
	}
	if n := e.cloud.Calls()["VirtualMachinesClient.BeginCreateOrUpdate"]; n != 1 {
		t.Errorf("the VM create was sent %d times, want 1", n)
	}
	deleteMachine(t, e.platform(t), m)
	if left := leftovers(e.cloud); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestRestartMidDelete: a delete resumed by a new controller ends; nothing
// is left.
func TestRestartMidDelete(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 3})
	m := windowsMachine("win-d")
	ensure(t, e.platform(t), m)
	m.HybridMachine.DeletionTimestamp = ptr.To(metav1.Now())
	gone, op, err := e.platform(t).DeleteMachine(t.Context(), m)
	must(t, err)
	if gone || op.Type != infrav1.MachineOperationDelete {
		t.Fatalf("gone %v, operation %v: want a VM delete in flight", gone, op.Type)
	}
	m.HybridMachine.Status.Operation = op
	deleteMachine(t, e.platform(t), m)
	if left := leftovers(e.cloud); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if n := e.cloud.Calls()["VirtualMachinesClient.BeginDelete"]; n != 1 {
		t.Errorf("the VM delete was sent %d times, want 1", n)
	}
}

// TestRetryAfterHonoured: a 429 whose Retry-After is two minutes is not
// retried inside the call; it comes back as ErrUnavailable to be tried
// after 120 s, and says that Azure throttled it.
func TestRetryAfterHonoured(t *testing.T) {
	e := newEnvRetry(t, azuresim.Options{}, azure.RetryOptions())
	e.cloud.SetFault(func(req *http.Request) *http.Response {
		if req.Method != http.MethodPut || !strings.Contains(req.URL.Path, "/virtualMachines/") {
			return nil
		}
		return throttled(req, "120")
	})
	p := e.platform(t)
	m := windowsMachine("win-e")
	start := time.Now()
	var err error
	for range 5 {
		var st platform.MachineState
		st, err = p.EnsureMachine(t.Context(), m)
		m.HybridMachine.Status.Operation = st.Operation
		if err != nil {
			break
		}
	}
	if !errors.Is(err, platform.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	if d := platform.RetryAfter(err); d != 120*time.Second {
		t.Errorf("retry after %s, want 2m0s", d)
	}
	if !strings.Contains(err.Error(), "throttles") || !strings.Contains(err.Error(), "2m0s") {
		t.Errorf("the message does not say it was throttled and when it is tried again: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call held the reconciler for %s", d)
	}
	// One request, answered 429; the SDK does not retry a 120 s wait.
	if n := e.cloud.Calls()["VirtualMachinesClient.BeginCreateOrUpdate"]; n != 1 {
		t.Errorf("the VM create was sent %d times, want 1", n)
	}
}

func throttled(req *http.Request, after string) *http.Response {
	body := `{"error":{"code":"TooManyRequests","message":"The request is throttled."}}`
	return &http.Response{
		StatusCode: http.StatusTooManyRequests,
		Status:     "429 Too Many Requests",
		Header:     http.Header{"Retry-After": {after}, "Content-Type": {"application/json"}, "X-Ms-Error-Code": {"TooManyRequests"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}
}

// TestAnotherMachinesVMIsLeftAlone: a VM with the machine's name but
// another machine's tag is neither adopted nor deleted.
func TestAnotherMachinesVMIsLeftAlone(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	p := e.platform(t)
	other := windowsMachine("win-f")
	ensure(t, p, other)
	m := windowsMachine("win-f")
	m.HybridMachine.Namespace = "elsewhere"
	_, err := p.EnsureMachine(t.Context(), m)
	if !errors.Is(err, platform.ErrInvalid) || !strings.Contains(err.Error(), "belongs to ns/win-f") {
		t.Fatalf("error %v, want ErrInvalid naming the owner", err)
	}
	deleteMachine(t, p, m)
	if n := len(e.cloud.VirtualMachines()); n != 1 {
		t.Errorf("%d VMs after deleting the machine that did not own it, want 1", n)
	}
}

// TestFaultsAcrossAllCalls: 5 % of all calls, polls included, fail with a
// 500, a 429, or a 429 or 503 whose Retry-After is longer than the SDK
// waits (those reach capwin, which must take them for a retry); 50
// machines are made and deleted, each once, with nothing left.
func TestFaultsAcrossAllCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("50 machines")
	}
	e := newEnv(t, azuresim.Options{Polls: 1})
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	injected, returned := 0, 0
	e.cloud.SetFault(func(req *http.Request) *http.Response {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(100) >= 5 {
			return nil
		}
		injected++
		switch rng.IntN(4) {
		case 0:
			// A 429 without Retry-After: the SDK's own short backoff.
			r := throttled(req, "")
			r.Header.Del("Retry-After")
			return r
		case 1:
			// Longer than the SDK waits: back to capwin, which must
			// take it for a retry.
			returned++
			return throttled(req, "30")
		case 2:
			returned++
			r := serverError(req)
			r.StatusCode, r.Status = http.StatusServiceUnavailable, "503 Service Unavailable"
			r.Header.Set("Retry-After", "30")
			return r
		}
		return serverError(req)
	})
	p := e.platform(t)
	writes := e.cloud.Writes()
	machines := make([]*platform.Machine, 50)
	for i := range machines {
		machines[i] = windowsMachine(fmt.Sprintf("f-%02d", i))
		converge(t, func() (bool, error) {
			st, err := p.EnsureMachine(t.Context(), machines[i])
			if err == nil || !errors.Is(err, platform.ErrUnavailable) {
				machines[i].HybridMachine.Status.Operation = st.Operation
			}
			return err == nil && st.Exists && st.Operation.IsZero(), err
		})
		machines[i].HybridMachine.Status.Initialization.Provisioned = ptr.To(true)
	}
	if n := len(e.cloud.VirtualMachines()); n != 50 {
		t.Errorf("%d VMs, want 50", n)
	}
	// A NIC and a VM create each, none twice.
	if n := e.cloud.Writes() - writes; n != 100 {
		t.Errorf("%d writes reached Azure for 50 machines, want 100", n)
	}
	for _, m := range machines {
		m.HybridMachine.DeletionTimestamp = ptr.To(metav1.Now())
		converge(t, func() (bool, error) {
			gone, op, err := p.DeleteMachine(t.Context(), m)
			if err == nil || !errors.Is(err, platform.ErrUnavailable) {
				m.HybridMachine.Status.Operation = op
			}
			return gone, err
		})
	}
	if left := leftovers(e.cloud); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	mu.Lock()
	defer mu.Unlock()
	if injected < 20 || returned < 5 {
		t.Errorf("only %d faults were injected, %d of them longer than the SDK waits: the test proves little", injected, returned)
	}
	t.Logf("%d faults injected across %d calls, %d of them with a Retry-After the SDK does not wait out", injected, total(e.cloud.Calls()), returned)
}

// converge calls step until it reports done; platform errors are what a
// reconciler retries.
func converge(t *testing.T, step func() (bool, error)) {
	t.Helper()
	for range 100 {
		done, err := step()
		if err != nil && !errors.Is(err, platform.ErrUnavailable) {
			t.Fatalf("a fault was not taken for a retryable error: %v", err)
		}
		if done {
			return
		}
	}
	t.Fatal("did not converge in 100 steps")
}

func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

func serverError(req *http.Request) *http.Response {
	return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"error":{"code":"InternalServerError","message":"An internal error occurred."}}`)), Request: req}
}

// TestAnotherMachinesNICIsLeftAlone: a NIC with the machine's name but
// another machine's tag is not used for its VM.
func TestAnotherMachinesNICIsLeftAlone(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 1})
	p := e.platform(t)
	other := windowsMachine("win-g")
	st, err := p.EnsureMachine(t.Context(), other)
	must(t, err)
	if st.Operation.Type != infrav1.MachineOperationCreateNetworkInterface {
		t.Fatalf("operation %v, want the NIC create", st.Operation.Type)
	}
	m := windowsMachine("win-g")
	m.HybridMachine.Namespace = "elsewhere"
	_, err = p.EnsureMachine(t.Context(), m)
	if !errors.Is(err, platform.ErrInvalid) || !strings.Contains(err.Error(), "Network interface win-g-nic exists and belongs to ns/win-g") {
		t.Fatalf("error %v, want ErrInvalid naming the NIC's owner", err)
	}
	if n := e.cloud.Calls()["VirtualMachinesClient.BeginCreateOrUpdate"]; n != 0 {
		t.Errorf("%d VM creates sent on another machine's NIC", n)
	}
}

// TestOperationStatusGone: when Azure no longer keeps an operation's
// status, the resource is looked at afresh instead of the machine being
// failed.
func TestOperationStatusGone(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 2})
	p := e.platform(t)
	m := windowsMachine("win-h")
	st, err := p.EnsureMachine(t.Context(), m)
	must(t, err)
	m.HybridMachine.Status.Operation = st.Operation
	e.cloud.SetFault(func(req *http.Request) *http.Response {
		if !strings.HasSuffix(req.URL.Path, "/get/fake/status") {
			return nil
		}
		r := serverError(req)
		r.StatusCode, r.Status = http.StatusNotFound, "404 Not Found"
		r.Body = io.NopCloser(strings.NewReader(`{"error":{"code":"NotFound","message":"The operation was not found."}}`))
		return r
	})
	st, err = p.EnsureMachine(t.Context(), m)
	if errors.Is(err, platform.ErrOperationFailed) {
		t.Fatalf("a gone operation status failed the machine: %v", err)
	}
	if !st.Operation.IsZero() || !st.OperationEnded {
		t.Errorf("the gone operation is not cleared: %+v", st)
	}
	// The NIC is found still being made, and waited for.
	if !errors.Is(err, platform.ErrUnavailable) || !strings.Contains(err.Error(), "win-h-nic is in provisioning state") {
		t.Errorf("error %v, want a wait for the NIC", err)
	}
}

// TestLateCreateFailureIsReported: a VM create Azure accepted and then
// failed (here OSProvisioningTimedOut, answered to the poll) ends as
// ErrOperationFailed with Azure's words, and the operation is no longer
// recorded.
func TestLateCreateFailureIsReported(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 1})
	p := e.platform(t)
	m := windowsMachine("win-i")
	for m.HybridMachine.Status.Operation.Type != infrav1.MachineOperationCreate {
		st, err := p.EnsureMachine(t.Context(), m)
		must(t, err)
		m.HybridMachine.Status.Operation = st.Operation
	}
	e.cloud.SetFault(func(req *http.Request) *http.Response {
		if !strings.HasSuffix(req.URL.Path, "/virtualMachines/win-i/get/fake/status") {
			return nil
		}
		r := serverError(req)
		r.StatusCode, r.Status = http.StatusConflict, "409 Conflict"
		r.Body = io.NopCloser(strings.NewReader(`{"error":{"code":"OSProvisioningTimedOut","message":"OS Provisioning for VM 'win-i' did not finish in the allotted time."}}`))
		return r
	})
	st, err := p.EnsureMachine(t.Context(), m)
	if !errors.Is(err, platform.ErrOperationFailed) || !strings.Contains(err.Error(), "did not finish in the allotted time") {
		t.Fatalf("error %v, want ErrOperationFailed with Azure's words", err)
	}
	if !st.Operation.IsZero() {
		t.Errorf("the failed create is still recorded: %v", st.Operation.Type)
	}
}

// TestResyncReadsTheGroupOnce: once machines run, their resyncs share one
// list of the resource group's VMs and one of its network interfaces, and
// read nothing of their own.
func TestResyncReadsTheGroupOnce(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 1})
	p := e.platform(t)
	var ms []*platform.Machine
	for i := range 3 {
		m := windowsMachine(fmt.Sprintf("r-%d", i))
		ensure(t, p, m)
		ms = append(ms, m)
	}
	before := e.cloud.Calls()
	for _, m := range ms {
		st, err := p.EnsureMachine(t.Context(), m)
		must(t, err)
		if !st.Running || st.ProviderID == "" || len(st.Addresses) != 1 {
			t.Errorf("%s: the resync reports %+v, want it running with its provider ID and address", m.HybridMachine.Name, st)
		}
	}
	got := map[string]int{}
	for api, n := range e.cloud.Calls() {
		if d := n - before[api]; d != 0 {
			got[api] = d
		}
	}
	want := map[string]int{"VirtualMachinesClient.NewListPager": 1, "InterfacesClient.NewListPager": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("three resyncs sent %v, want %v", got, want)
	}
}

// TestResyncOfAStoppedVMStartsIt: a VM stopped outside capwin is seen in
// the group's read and looked at on its own, then started.
func TestResyncOfAStoppedVMStartsIt(t *testing.T) {
	e := newEnv(t, azuresim.Options{Polls: 1})
	m := windowsMachine("stopped")
	ensure(t, e.platform(t), m)
	vms, err := armcompute.NewVirtualMachinesClient(subscription, azuresim.Credential(), e.opts)
	must(t, err)
	poller, err := vms.BeginPowerOff(t.Context(), group, "stopped", nil)
	must(t, err)
	finish(t, poller)

	// A platform of its own: no earlier read of the group.
	p := e.platform(t)
	st, err := p.EnsureMachine(t.Context(), m)
	must(t, err)
	if st.Operation.Type != infrav1.MachineOperationPowerOn {
		t.Fatalf("the resync of a stopped VM reports %+v, want a power-on in flight", st)
	}
	m.HybridMachine.Status.Operation = st.Operation
	st, _ = ensure(t, p, m)
	if !st.Running {
		t.Errorf("after its power-on the VM reports %+v, want it running", st)
	}
	vm, err := vms.Get(t.Context(), group, "stopped", &armcompute.VirtualMachinesClientGetOptions{Expand: ptr.To(armcompute.InstanceViewTypesInstanceView)})
	must(t, err)
	if s := *vm.Properties.InstanceView.Statuses[len(vm.Properties.InstanceView.Statuses)-1].Code; s != "PowerState/running" {
		t.Errorf("the VM is in %s, want PowerState/running", s)
	}
}

// TestResyncOfADeletedVM: a provisioned machine whose VM is gone from the
// group's read is looked at on its own, and reported gone.
func TestResyncOfADeletedVM(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	m := windowsMachine("deleted")
	ensure(t, e.platform(t), m)
	vms, err := armcompute.NewVirtualMachinesClient(subscription, azuresim.Credential(), e.opts)
	must(t, err)
	poller, err := vms.BeginDelete(t.Context(), group, "deleted", nil)
	must(t, err)
	finish(t, poller)

	_, err = e.platform(t).EnsureMachine(t.Context(), m)
	if !errors.Is(err, platform.ErrMachineGone) {
		t.Errorf("the resync of a deleted VM answered %v, want ErrMachineGone", err)
	}
}

// TestProvisioningTimedOutVMIsTheMachines: a VM whose create failed only
// because its guest did not report ready in time, and which runs, is the
// machine's VM (its join says whether it became a node); a VM that failed
// otherwise is reported failed.
func TestProvisioningTimedOutVMIsTheMachines(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	p := e.platform(t)
	for _, c := range []struct {
		name, code string
		wantErr    error
	}{
		{"win-late", "OSProvisioningTimedOut", nil},
		{"win-alloc", "AllocationFailed", platform.ErrOperationFailed},
	} {
		m := windowsMachine(c.name)
		ensure(t, p, m)
		// As if the create's last poll had failed: never provisioned.
		m.HybridMachine.Status.Initialization.Provisioned = nil
		if !e.cloud.FailVM(group, c.name, c.code, "failed late") {
			t.Fatalf("no VM %s", c.name)
		}
		st, err := p.EnsureMachine(t.Context(), m)
		if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (st.Running && st.ProviderID != "") {
			t.Errorf("%s: a VM failed with %s reports %+v, %v; want error %v", c.name, c.code, st, err, c.wantErr)
		}
	}
}

// TestRefusedGroupReadFallsBack: a list of the resource group that Azure
// refuses (400) leaves each machine to its own reads; a throttled one is
// waited out.
func TestRefusedGroupReadFallsBack(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	m := windowsMachine("win-list")
	ensure(t, e.platform(t), m)
	status := http.StatusBadRequest
	e.cloud.SetFault(func(req *http.Request) *http.Response {
		if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/virtualMachines") {
			return nil
		}
		r := serverError(req)
		r.StatusCode, r.Status = status, http.StatusText(status)
		r.Body = io.NopCloser(strings.NewReader(`{"error":{"code":"InvalidParameter","message":"$expand needs $filter."}}`))
		if status == http.StatusTooManyRequests {
			r.Header.Set("Retry-After", "30")
		}
		return r
	})
	st, err := e.platform(t).EnsureMachine(t.Context(), m)
	if err != nil || !st.Running {
		t.Errorf("with the group's list refused, the resync reports %+v, %v; want it running from the machine's own reads", st, err)
	}
	status = http.StatusTooManyRequests
	if _, err := e.platform(t).EnsureMachine(t.Context(), m); !errors.Is(err, platform.ErrUnavailable) {
		t.Errorf("with the group's list throttled, the resync answered %v; want ErrUnavailable", err)
	}
}
