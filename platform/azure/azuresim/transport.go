package azuresim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	computefake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7/fake"
	networkfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7/fake"
	resourcesfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/fake"
)

// pollSuffix ends the path of every poll of a fake long-running operation.
const pollSuffix = "/get/fake/status"

// pollerStatusHeader carries the state of a fake long-running operation.
const pollerStatusHeader = "Fake-Poller-Status"

// transport sits between the SDK pipeline and the fake servers: it counts
// requests, injects faults and throttling, checks the subscription, picks
// the fake server for the client, turns model errors into ARM error
// responses and commits an operation when its last response goes out.
type transport struct {
	c *Cloud

	compute   *computefake.ServerFactoryTransport
	network   *networkfake.ServerFactoryTransport
	resources *resourcesfake.ServerFactoryTransport
	byClient  map[string]policy.Transporter // client name ("InterfacesClient") → fake

	mu     sync.Mutex
	fault  func(req *http.Request) *http.Response
	calls  map[string]int
	writes int
	// throttled counts the writes answered 429 by the write limit.
	throttled int
	inflight  map[string]func() // operation key → commit
	tokens    float64
	refilled  time.Time
}

func newTransport(c *Cloud) *transport {
	t := &transport{
		c:         c,
		compute:   computefake.NewServerFactoryTransport(c.computeServers()),
		network:   networkfake.NewServerFactoryTransport(c.networkServers()),
		resources: resourcesfake.NewServerFactoryTransport(c.resourceServers()),
		calls:     map[string]int{},
		inflight:  map[string]func(){},
		tokens:    float64(c.burst()),
		refilled:  time.Now(),
	}
	t.byClient = map[string]policy.Transporter{
		"VirtualMachinesClient":   t.compute,
		"DisksClient":             t.compute,
		"VirtualNetworksClient":   t.network,
		"SubnetsClient":           t.network,
		"SecurityGroupsClient":    t.network,
		"RouteTablesClient":       t.network,
		"InterfacesClient":        t.network,
		"PublicIPAddressesClient": t.network,
		"LoadBalancersClient":     t.network,
		"ResourceGroupsClient":    t.resources,
		"Client":                  t.resources,
	}
	return t
}

// burst is the size of the write token bucket.
func (c *Cloud) burst() int {
	if c.opts.WriteBurst > 0 {
		return c.opts.WriteBurst
	}
	return int(math.Ceil(c.opts.WritesPerSecond))
}

// Transport returns the HTTP transport the SDK clients must use. It is the
// same value on every call: a client resumed from a resume token keeps
// polling the same operation only through the same transport.
func (c *Cloud) Transport() policy.Transporter { return c.tr }

// ClientOptions returns SDK client options that send every request to this
// cloud; everything else, retries included, keeps the SDK's defaults.
func (c *Cloud) ClientOptions() *arm.ClientOptions {
	return &arm.ClientOptions{ClientOptions: policy.ClientOptions{Transport: c.tr}}
}

// SetFault sets f, asked for every request (polls included) before the
// model sees it; a non-nil response is returned as is, except that a
// missing Request or Body is filled in. Use it to inject 429 with
// Retry-After, 500 or 503. nil removes the fault. Safe to call concurrently.
func (c *Cloud) SetFault(f func(req *http.Request) *http.Response) {
	c.tr.mu.Lock()
	defer c.tr.mu.Unlock()
	c.tr.fault = f
}

// Calls returns how many requests arrived, by API name (such as
// "VirtualMachinesClient.BeginCreateOrUpdate"); polls count under the API
// name followed by ":poll". Faulted and throttled requests count too.
func (c *Cloud) Calls() map[string]int {
	c.tr.mu.Lock()
	defer c.tr.mu.Unlock()
	out := make(map[string]int, len(c.tr.calls))
	for k, v := range c.tr.calls {
		out[k] = v
	}
	return out
}

// Writes returns how many PUT, PATCH, POST and DELETE requests (not
// polls) reached the model, that is were neither faulted nor throttled.
func (c *Cloud) Writes() int {
	c.tr.mu.Lock()
	defer c.tr.mu.Unlock()
	return c.tr.writes
}

// Throttled returns how many writes the write limit (WritesPerSecond)
// answered with 429; faults set with SetFault do not count.
func (c *Cloud) Throttled() int {
	c.tr.mu.Lock()
	defer c.tr.mu.Unlock()
	return c.tr.throttled
}

// Do implements policy.Transporter.
func (t *transport) Do(req *http.Request) (*http.Response, error) {
	api, _ := req.Context().Value(runtime.CtxAPINameKey{}).(string)
	isPoll := strings.HasSuffix(req.URL.Path, pollSuffix)
	isWrite := !isPoll && req.Method != http.MethodGet && req.Method != http.MethodHead
	opKey := api + " " + strings.ToLower(strings.TrimSuffix(req.URL.Path, pollSuffix))

	t.mu.Lock()
	if isPoll {
		t.calls[api+":poll"]++
	} else {
		t.calls[api]++
	}
	fault := t.fault
	t.mu.Unlock()

	if fault != nil {
		if resp := fault(req); resp != nil {
			if resp.Request == nil {
				resp.Request = req
			}
			if resp.Body == nil {
				resp.Body = http.NoBody
			}
			return resp, nil
		}
	}
	if e := t.checkSubscription(req.URL.Path); e != nil {
		return errorResponse(req, e, nil), nil
	}
	if isWrite {
		if wait, ok := t.takeToken(); !ok {
			t.mu.Lock()
			t.throttled++
			t.mu.Unlock()
			h := http.Header{}
			h.Set("Retry-After", strconv.Itoa(wait))
			return errorResponse(req, errf(http.StatusTooManyRequests, "TooManyRequests", "",
				"The request is being throttled: too many write requests. Retry after %d seconds.", wait), h), nil
		}
		t.mu.Lock()
		t.writes++
		t.mu.Unlock()
	}
	if isPoll && !t.known(opKey) {
		return errorResponse(req, errf(http.StatusNotFound, "NotFound", "",
			"The operation polled at %s is not known to this cloud.", req.URL.Path), nil), nil
	}
	client, _, _ := strings.Cut(api, ".")
	fake := t.byClient[client]
	if fake == nil {
		return errorResponse(req, errf(http.StatusBadRequest, "InvalidRequest", "",
			"azuresim does not simulate %q.", api), nil), nil
	}

	req = req.WithContext(context.WithValue(req.Context(), opCtxKey{}, opKey))
	resp, err := fake.Do(req)
	var ae *armError
	if errors.As(err, &ae) {
		return errorResponse(req, ae, nil), nil
	}
	if err != nil {
		return nil, err
	}
	switch resp.Header.Get(pollerStatusHeader) {
	case "Succeeded", "Failed", "Canceled":
		t.finish(opKey)
	}
	return resp, nil
}

// checkSubscription answers 404 SubscriptionNotFound for a path in another subscription.
func (t *transport) checkSubscription(path string) *armError {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) < 2 || !strings.EqualFold(parts[0], "subscriptions") {
		return nil
	}
	if !strings.EqualFold(parts[1], t.c.opts.SubscriptionID) {
		return errf(http.StatusNotFound, "SubscriptionNotFound", "", "The subscription '%s' could not be found.", parts[1])
	}
	return nil
}

// takeToken takes a write token from the bucket; when there is none it
// returns the whole seconds until one is free (at least 1) and false.
func (t *transport) takeToken() (int, bool) {
	rate := t.c.opts.WritesPerSecond
	if rate <= 0 {
		return 0, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.tokens = math.Min(float64(t.c.burst()), t.tokens+now.Sub(t.refilled).Seconds()*rate)
	t.refilled = now
	if t.tokens >= 1 {
		t.tokens--
		return 0, true
	}
	wait := int(math.Ceil((1 - t.tokens) / rate))
	return max(wait, 1), false
}

// register records commit as the end of the operation the request in ctx
// starts; model code calls it through Cloud.startOp.
func (t *transport) register(ctx context.Context, commit func()) {
	k, _ := ctx.Value(opCtxKey{}).(string)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inflight[k] = commit
}

// known reports whether the operation with key k has not ended yet.
func (t *transport) known(k string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.inflight[k]
	return ok
}

// finish commits the operation with key k, once.
func (t *transport) finish(k string) {
	t.mu.Lock()
	commit := t.inflight[k]
	delete(t.inflight, k)
	t.mu.Unlock()
	if commit != nil {
		commit()
	}
}

// errorResponse builds the HTTP response ARM sends for e.
func errorResponse(req *http.Request, e *armError, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	type body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Target  string `json:"target,omitempty"`
	}
	b, _ := json.Marshal(map[string]body{"error": {Code: e.Code, Message: e.Message, Target: e.Target}})
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("x-ms-error-code", e.Code)
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status)),
		StatusCode:    e.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}
}
