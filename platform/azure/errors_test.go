package azure

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/capwin/capwin/platform"
)

// TestClassify: each ARM answer becomes the platform error the reconciler
// acts on.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status     int
		code, msg  string
		retryAfter string
		kind       error
		after      time.Duration
		words      string
	}{
		{429, "TooManyRequests", "throttled", "120", platform.ErrUnavailable, 2 * time.Minute, "Azure throttles"},
		{503, "ServiceUnavailable", "down", "", platform.ErrUnavailable, throttledRetry, "trying again after 15s"},
		{409, "Conflict", "Another operation on this VM is in progress.", "", platform.ErrUnavailable, throttledRetry, "in progress"},
		{409, "PropertyChangeNotAllowed", "Changing property 'customData' is not allowed.", "", platform.ErrInvalid, platform.DefaultRetry, "customData"},
		{412, "PreconditionFailed", "exists", "", platform.ErrUnavailable, time.Second, "412"},
		{409, "OperationNotAllowed", "Operation results in exceeding approved standardDSv5Family Cores quota.", "", platform.ErrInsufficientCapacity, platform.DefaultRetry, "quota"},
		{409, "OperationNotAllowed", "The VM is being deleted.", "", platform.ErrUnavailable, throttledRetry, "being deleted"},
		{404, "ResourceGroupNotFound", "Resource group 'rg' could not be found.", "", platform.ErrNotFound, platform.DefaultRetry, "rg"},
		{400, "InvalidParameter", "bad computer name", "", platform.ErrInvalid, platform.DefaultRetry, "bad computer name"},
		{403, "AuthorizationFailed", "no", "", platform.ErrAuthentication, platform.DefaultRetry, "403"},
	} {
		t.Run(tc.code+"/"+tc.msg, func(t *testing.T) {
			req := &http.Request{Method: http.MethodPut, URL: &url.URL{Scheme: "https", Host: "management.azure.com", Path: "/x"}}
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {tc.code}}, Request: req,
				Body: io.NopCloser(strings.NewReader(`{"error":{"code":"` + tc.code + `","message":"` + tc.msg + `"}}`))}
			if tc.retryAfter != "" {
				resp.Header.Set("Retry-After", tc.retryAfter)
			}
			err := classify("creating VM v", runtime.NewResponseError(resp))
			if !errors.Is(err, tc.kind) {
				t.Errorf("%v is not %v", err, tc.kind)
			}
			if d := platform.RetryAfter(err); d != tc.after {
				t.Errorf("retry after %s, want %s", d, tc.after)
			}
			if !strings.Contains(err.Error(), tc.words) {
				t.Errorf("%q does not say %q", err, tc.words)
			}
		})
	}
}

// TestProviderIDLowersTheResourceGroup: the Azure cloud provider sets a
// Node's provider ID with its subscription and resource group in lower
// case, and Cluster API matches the Machine's to it as a string.
func TestProviderIDLowersTheResourceGroup(t *testing.T) {
	got := ProviderID("/subscriptions/ABCD-EF/resourceGroups/My-RG/providers/Microsoft.Compute/virtualMachines/Win-0")
	if want := "azure:///subscriptions/abcd-ef/resourceGroups/my-rg/providers/Microsoft.Compute/virtualMachines/Win-0"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if ProviderID("") != "" {
		t.Error("a VM without an ID has a provider ID")
	}
}
