// Package azuresim is a simulated Azure Resource Manager for capwin's tests:
// an in-memory model of the resources capwin touches (resource groups,
// virtual networks and subnets, network interfaces, VMs and their OS disks)
// served through the Azure SDK for Go's own fake servers, with the rules
// real Azure applies to what capwin sends (see each handler).
//
// Long-running operations take Options.Polls polls. A write shows at once,
// with provisioning state Creating or Deleting, and ends when a poll (or
// the Begin call itself, with no polls) answers Succeeded. Azure ends an
// operation whether or not anyone polls it; the simulation ends it only
// when it is polled, which is stricter: a controller must poll.
package azuresim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	computefake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	networkfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	resourcesfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/fake"
)

// Options shape a simulated Azure.
type Options struct {
	// SubscriptionID is the one subscription that exists.
	SubscriptionID string
	// Polls is how many polls each long-running write needs before it
	// ends; 0 ends it in the Begin call's own answer.
	Polls int
}

// Cloud is one simulated Azure.
type Cloud struct {
	o Options

	mu      sync.Mutex
	groups  map[string]*armresources.ResourceGroup
	vnets   map[string]*armnetwork.VirtualNetwork
	nics    map[string]*armnetwork.Interface
	vms     map[string]*armcompute.VirtualMachine
	disks   map[string]*armcompute.Disk
	pending map[string]func() // by lower-case resource path: what ends the operation
	calls   map[string]int
	onVM    []func(armcompute.VirtualMachine)
	fault   func(*http.Request) *http.Response

	compute, network, resources policy.Transporter
}

// New returns an empty Azure with one subscription.
func New(o Options) *Cloud {
	c := &Cloud{
		o:      o,
		groups: map[string]*armresources.ResourceGroup{}, vnets: map[string]*armnetwork.VirtualNetwork{},
		nics: map[string]*armnetwork.Interface{}, vms: map[string]*armcompute.VirtualMachine{},
		disks: map[string]*armcompute.Disk{}, pending: map[string]func(){}, calls: map[string]int{},
	}
	c.compute = computefake.NewServerFactoryTransport(&computefake.ServerFactory{
		VirtualMachinesServer: c.vmServer(),
		DisksServer:           c.diskServer(),
	})
	c.network = networkfake.NewServerFactoryTransport(&networkfake.ServerFactory{
		InterfacesServer:      c.nicServer(),
		VirtualNetworksServer: c.vnetServer(),
		SubnetsServer:         c.subnetServer(),
	})
	c.resources = resourcesfake.NewServerFactoryTransport(&resourcesfake.ServerFactory{
		ResourceGroupsServer: c.groupServer(),
	})
	return c
}

// Credential is a token credential the simulation accepts.
func Credential() azcore.TokenCredential { return &azfake.TokenCredential{} }

// ClientOptions are ARM client options that send every request to this
// Azure, with the SDK's default retries.
func (c *Cloud) ClientOptions() *arm.ClientOptions {
	return &arm.ClientOptions{ClientOptions: policy.ClientOptions{Transport: c}}
}

// SetFault sets f, asked first for every request, polls included; a
// response it returns is Azure's answer (a 429 with Retry-After, a 500).
func (c *Cloud) SetFault(f func(*http.Request) *http.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fault = f
}

// Calls counts the requests that reached the model, by API name
// ("VirtualMachinesClient.BeginCreateOrUpdate"; a poll counts under the
// API name and ":poll"), and those a fault answered under "fault".
func (c *Cloud) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

// OnVMCreated registers f, called in its own goroutine once for each VM
// whose create ended.
func (c *Cloud) OnVMCreated(f func(armcompute.VirtualMachine)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onVM = append(c.onVM, f)
}

const pollSuffix = "/get/fake/status"

// errSlot carries a handler's error message to the transport, which writes
// it into the error response's body as ARM does.
type errSlot struct{ message string }

type errSlotKey struct{}

// Do routes a request to the fake server of its API, after the fault, and
// ends the operation a Succeeded answer ends.
func (c *Cloud) Do(req *http.Request) (*http.Response, error) {
	api, _ := req.Context().Value(runtime.CtxAPINameKey{}).(string)
	poll := strings.HasSuffix(req.URL.Path, pollSuffix)
	c.mu.Lock()
	fault := c.fault
	c.mu.Unlock()
	if fault != nil {
		if resp := fault(req); resp != nil {
			c.count("fault")
			return resp, nil
		}
	}
	if poll {
		c.count(api + ":poll")
	} else {
		c.count(api)
	}
	if !strings.Contains(strings.ToLower(req.URL.Path), "/subscriptions/"+strings.ToLower(c.o.SubscriptionID)+"/") {
		return errorResponse(req, http.StatusNotFound, "SubscriptionNotFound", "The subscription could not be found."), nil
	}
	var t policy.Transporter
	switch {
	case strings.HasPrefix(api, "VirtualMachinesClient."), strings.HasPrefix(api, "DisksClient."):
		t = c.compute
	case strings.HasPrefix(api, "InterfacesClient."), strings.HasPrefix(api, "VirtualNetworksClient."), strings.HasPrefix(api, "SubnetsClient."):
		t = c.network
	case strings.HasPrefix(api, "ResourceGroupsClient."):
		t = c.resources
	default:
		return errorResponse(req, http.StatusBadRequest, "NotSimulated", "The simulated Azure does not serve "+api), nil
	}
	slot := &errSlot{}
	resp, err := t.Do(req.WithContext(context.WithValue(req.Context(), errSlotKey{}, slot)))
	var re *azcore.ResponseError
	if err != nil && errors.As(err, &re) {
		return errorResponse(req, re.StatusCode, re.ErrorCode, slot.message), nil
	}
	if err != nil {
		return nil, err
	}
	if resp.Header.Get("Fake-Poller-Status") == "Succeeded" {
		c.end(strings.TrimSuffix(req.URL.Path, pollSuffix))
	}
	return resp, nil
}

func (c *Cloud) count(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[key]++
}

// end runs what ends the operation on a resource.
func (c *Cloud) end(path string) {
	c.mu.Lock()
	f := c.pending[strings.ToLower(path)]
	delete(c.pending, strings.ToLower(path))
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// errorResponse is an ARM error answer.
func errorResponse(req *http.Request, status int, code, message string) *http.Response {
	if message == "" {
		message = code
	}
	body := fmt.Sprintf(`{"error":{"code":%q,"message":%q}}`, code, message)
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header:  http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {code}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: req,
	}
}

// fail makes a handler's error answer: status, ARM code and message.
func fail(ctx context.Context, status int, code, format string, args ...any) azfake.ErrorResponder {
	if slot, ok := ctx.Value(errSlotKey{}).(*errSlot); ok {
		slot.message = fmt.Sprintf(format, args...)
	}
	var e azfake.ErrorResponder
	e.SetResponseError(status, code)
	return e
}

func key(parts ...string) string { return strings.ToLower(strings.Join(parts, "/")) }

// id is a resource ID in the subscription.
func (c *Cloud) id(group, provider, kind, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s/%s", c.o.SubscriptionID, group, provider, kind, name)
}

// groupExists reports whether a resource group exists; c.mu is held.
func (c *Cloud) groupExists(group string) bool { return c.groups[key(group)] != nil }

func sorted[T any](m map[string]*T, copyOf func(*T) T) []T {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		out = append(out, copyOf(m[k]))
	}
	return out
}
