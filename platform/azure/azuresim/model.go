package azuresim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
)

// Options configures a simulated cloud.
type Options struct {
	// SubscriptionID is the one subscription every resource lives in; a
	// request for another subscription gets 404 SubscriptionNotFound.
	SubscriptionID string
	// Polls is how many polls each long-running write needs before it ends;
	// with 0 the response to the Begin request is already terminal.
	Polls int
	// WritesPerSecond, when > 0, limits PUT, PATCH, POST and DELETE
	// requests (not polls, not GETs) with one token bucket of this rate. A write over the
	// limit gets 429 TooManyRequests with a Retry-After header holding the
	// whole seconds until a token is free (at least 1).
	WritesPerSecond float64
	// WriteBurst is the size of the token bucket; 0 means WritesPerSecond
	// rounded up.
	WriteBurst int
}

// Cloud is one simulated Azure subscription. It is safe for concurrent use.
type Cloud struct {
	opts Options

	// mu guards every field below it.
	mu       sync.Mutex
	rgs      map[string]*armresources.ResourceGroup // by lower-cased name
	vnets    map[string]*armnetwork.VirtualNetwork  // by lower-cased ID, subnets inline
	nsgs     map[string]*armnetwork.SecurityGroup
	rts      map[string]*armnetwork.RouteTable
	pips     map[string]*armnetwork.PublicIPAddress
	lbs      map[string]*armnetwork.LoadBalancer
	nics     map[string]*armnetwork.Interface
	vms      map[string]*armcompute.VirtualMachine // with adminPassword and customData
	disks    map[string]*armcompute.Disk
	pending  map[string]uint64 // lower-cased ID → the operation on it that has not ended
	deleting map[string]bool   // lower-cased IDs of resources whose delete has not ended
	nextOp   uint64
	// nextPublicIP numbers the public IP addresses given out.
	nextPublicIP uint32
	created      []func(vm armcompute.VirtualMachine)

	tr *transport
}

// New returns an empty simulated cloud.
func New(o Options) *Cloud {
	c := &Cloud{
		opts:     o,
		rgs:      map[string]*armresources.ResourceGroup{},
		vnets:    map[string]*armnetwork.VirtualNetwork{},
		nsgs:     map[string]*armnetwork.SecurityGroup{},
		rts:      map[string]*armnetwork.RouteTable{},
		pips:     map[string]*armnetwork.PublicIPAddress{},
		lbs:      map[string]*armnetwork.LoadBalancer{},
		nics:     map[string]*armnetwork.Interface{},
		vms:      map[string]*armcompute.VirtualMachine{},
		disks:    map[string]*armcompute.Disk{},
		pending:  map[string]uint64{},
		deleting: map[string]bool{},
	}
	c.tr = newTransport(c)
	return c
}

// OnVMCreated registers f, called in its own goroutine once per VM when the
// VM's create operation ends with Succeeded. The VM passed to f includes
// osProfile.customData.
func (c *Cloud) OnVMCreated(f func(vm armcompute.VirtualMachine)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created = append(c.created, f)
}

// FailVM leaves the VM name of resource group rg, whose create has ended,
// as Azure leaves a VM whose create failed late: provisioning state Failed, the instance view
// status ProvisioningState/failed/<code> with message, and its power state
// as it was (a VM whose guest did not report ready in time,
// OSProvisioningTimedOut, keeps running). It reports whether the VM exists.
func (c *Cloud) FailVM(rg, name, code, message string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	vm := c.vms[key(c.resourceID(rg, typeVM, name))]
	if vm == nil {
		return false
	}
	power := powerOf(vm)
	setVMState(vm, "Failed", false)
	vm.Properties.InstanceView.Statuses[0].Code = ptr("ProvisioningState/failed/" + code)
	vm.Properties.InstanceView.Statuses[0].Level = ptr(armcompute.StatusLevelTypesError)
	vm.Properties.InstanceView.Statuses[0].Message = ptr(message)
	setPower(vm, power)
	return true
}

// VirtualMachines returns a copy of every VM, sorted by ID, including
// osProfile.adminPassword and osProfile.customData.
func (c *Cloud) VirtualMachines() []armcompute.VirtualMachine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedCopies(c.vms, func(v *armcompute.VirtualMachine) *string { return v.ID })
}

// Interfaces returns a copy of every network interface, sorted by ID.
func (c *Cloud) Interfaces() []armnetwork.Interface {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedCopies(c.nics, func(v *armnetwork.Interface) *string { return v.ID })
}

// Disks returns a copy of every managed disk, sorted by ID.
func (c *Cloud) Disks() []armcompute.Disk {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedCopies(c.disks, func(v *armcompute.Disk) *string { return v.ID })
}

// LoadBalancers returns a copy of every load balancer, sorted by ID, its
// pools listing the NIC IP configurations in them.
func (c *Cloud) LoadBalancers() []armnetwork.LoadBalancer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := sortedCopies(c.lbs, func(v *armnetwork.LoadBalancer) *string { return v.ID })
	for i := range out {
		out[i] = c.withPoolMembers(out[i])
	}
	return out
}

// VirtualNetworks returns a copy of every virtual network, sorted by ID.
func (c *Cloud) VirtualNetworks() []armnetwork.VirtualNetwork {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedCopies(c.vnets, func(v *armnetwork.VirtualNetwork) *string { return v.ID })
}

// ResourceGroups returns a copy of every resource group, sorted by ID.
func (c *Cloud) ResourceGroups() []armresources.ResourceGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedCopies(c.rgs, func(v *armresources.ResourceGroup) *string { return v.ID })
}

// sortedCopies deep-copies the values of m and sorts them by the ID id returns.
func sortedCopies[T any](m map[string]*T, id func(*T) *string) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, clone(*v))
	}
	sort.Slice(out, func(i, j int) bool { return deref(id(&out[i])) < deref(id(&out[j])) })
	return out
}

// clone deep-copies an SDK model value through its JSON form, the same way
// it travels between client and server.
func clone[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("azuresim: marshal %T: %v", v, err))
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("azuresim: unmarshal %T: %v", v, err))
	}
	return out
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

// key is the map key of a resource ID: Azure compares IDs without case.
func key(id string) string { return strings.ToLower(strings.TrimSuffix(id, "/")) }

// newGUID returns a random version 4 UUID in its text form.
func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newHex returns n random lower-case hex digits.
func newHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// groupID is the ID of the resource group named rg, in the casing it was created with.
func (c *Cloud) groupID(rg string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", c.opts.SubscriptionID, rg)
}

// resourceID builds the ID of a resource of type typ ("Microsoft.Network/networkInterfaces") in group rg.
func (c *Cloud) resourceID(rg, typ, name string) string {
	return fmt.Sprintf("%s/providers/%s/%s", c.groupID(rg), typ, name)
}

// group returns the resource group named rg; the caller holds c.mu.
// A missing group gives 404 ResourceGroupNotFound, a group being deleted
// (when forWrite) 409 ResourceGroupBeingDeleted.
func (c *Cloud) group(rg string, forWrite bool) (*armresources.ResourceGroup, *armError) {
	g := c.rgs[strings.ToLower(rg)]
	if g == nil {
		return nil, errf(http.StatusNotFound, "ResourceGroupNotFound", "", "Resource group '%s' could not be found.", rg)
	}
	if forWrite && deref(g.Properties.ProvisioningState) == "Deleting" {
		return nil, errf(http.StatusConflict, "ResourceGroupBeingDeleted", "", "The resource group '%s' is in deprovisioning state and cannot perform this operation.", rg)
	}
	return g, nil
}

// armError is an ARM error response; the transport turns it into an HTTP
// response with the body {"error":{"code","message","target"}}.
type armError struct {
	Status  int
	Code    string
	Message string
	Target  string
}

func (e *armError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// errf builds an armError with a formatted message.
func errf(status int, code, target, format string, args ...any) *armError {
	return &armError{Status: status, Code: code, Target: target, Message: fmt.Sprintf(format, args...)}
}

// errResponder hands an armError to a fake server.
func errResponder(e *armError) azfake.ErrorResponder {
	var r azfake.ErrorResponder
	if e != nil {
		r.SetError(e)
	}
	return r
}

// notFound is the 404 ResourceNotFound Azure answers for a missing resource.
func notFound(typ, name, rg string) *armError {
	return errf(http.StatusNotFound, "ResourceNotFound", "", "The Resource '%s/%s' under resource group '%s' was not found.", typ, name, rg)
}

// opCtxKey is the context key under which the transport passes the
// identity of the operation a request starts or polls.
type opCtxKey struct{}

// startOp marks the resource with lower-cased ID k as having an operation
// in progress and registers commit, which the transport runs when the
// operation ends. commit runs only if no later operation replaced this one
// on the same resource; the caller holds c.mu, commit takes it itself.
func (c *Cloud) startOp(ctx context.Context, k string, commit func()) {
	c.nextOp++
	op := c.nextOp
	c.pending[k] = op
	c.tr.register(ctx, func() {
		c.mu.Lock()
		if c.pending[k] != op {
			c.mu.Unlock()
			return
		}
		delete(c.pending, k)
		commit()
		c.mu.Unlock()
	})
}

// startDelete marks the resource with lower-cased ID k as being deleted
// and runs remove when the delete ends; the caller holds c.mu.
func (c *Cloud) startDelete(ctx context.Context, k string, remove func()) {
	c.deleting[k] = true
	c.startOp(ctx, k, func() {
		delete(c.deleting, k)
		remove()
	})
}

// lro builds the poller responses of a write: Polls non-terminal responses,
// then the terminal one. first is the status of the Begin response (201
// for a create, 200 for an update, 202 for a delete).
func lro[T any](c *Cloud, first int, result T) azfake.PollerResponder[T] {
	var p azfake.PollerResponder[T]
	final := http.StatusOK
	if first == http.StatusCreated {
		final = http.StatusCreated
	}
	for i := 0; i < c.opts.Polls; i++ {
		status := first
		if i > 0 && first == http.StatusCreated {
			status = http.StatusOK
		}
		p.AddNonTerminalResponse(status, nil)
		final = http.StatusOK
	}
	p.SetTerminalResponse(final, result, nil)
	return p
}

// deleted is the poller of a delete of a resource that does not exist:
// ARM's delete is idempotent and answers 204 at once.
func deleted[T any]() azfake.PollerResponder[T] {
	var p azfake.PollerResponder[T]
	var zero T
	p.SetTerminalResponse(http.StatusNoContent, zero, nil)
	return p
}

// Credential returns a token credential the simulated cloud accepts.
func Credential() azcore.TokenCredential { return &azfake.TokenCredential{} }
