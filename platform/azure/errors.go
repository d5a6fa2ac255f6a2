package azure

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/capwin/capwin/platform"
)

// throttledRetry is how soon a throttled or failing call is tried again
// when Azure sent no Retry-After.
const throttledRetry = 15 * time.Second

// capacityCodes are the ARM error codes that mean Azure lacks the capacity
// or the subscription the quota for a VM.
var capacityCodes = []string{
	"AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest",
	"OverconstrainedZonalAllocationRequest", "SkuNotAvailable", "QuotaExceeded",
}

// notFoundCodes are the ARM error codes of something the spec names that
// does not exist.
var notFoundCodes = []string{
	"ResourceGroupNotFound", "SubscriptionNotFound", "InvalidResourceReference",
	"NotFound", "ResourceNotFound", "ImageNotFound", "GalleryImageNotFound",
	"PlatformImageNotFound", "InvalidSubnet",
}

// classify turns an error of an ARM call (doing says which) into a
// platform error of the right kind: throttling and server errors are
// ErrUnavailable, to be tried again after Azure's Retry-After.
func classify(doing string, err error) error {
	if err == nil {
		return nil
	}
	var authErr *azidentity.AuthenticationFailedError
	if errors.As(err, &authErr) {
		return fmt.Errorf("%w: %s: Microsoft Entra ID refused the credentials: %s", platform.ErrAuthentication, doing, firstLine(authErr.Error()))
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		// No answer at all: a network error or a timeout.
		return platform.WithRetryAfter(fmt.Errorf("%w: %s: %w", platform.ErrUnavailable, doing, err), throttledRetry)
	}
	code := re.ErrorCode
	if code == "" {
		code = http.StatusText(re.StatusCode)
	}
	what := fmt.Sprintf("%s: Azure answered %d %s", doing, re.StatusCode, code)
	if msg := armMessage(re); msg != "" {
		what += ": " + msg
	}
	switch {
	case re.StatusCode == http.StatusTooManyRequests:
		after := retryAfter(re.RawResponse)
		return platform.WithRetryAfter(fmt.Errorf("%w: %s; Azure throttles this subscription's requests, trying again after %s", platform.ErrUnavailable, what, after), after)
	case re.StatusCode >= 500:
		after := retryAfter(re.RawResponse)
		return platform.WithRetryAfter(fmt.Errorf("%w: %s; trying again after %s", platform.ErrUnavailable, what, after), after)
	case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s", platform.ErrAuthentication, what)
	case containsCode(capacityCodes, code),
		// What ARM answers when a core quota would be exceeded.
		strings.EqualFold(code, "OperationNotAllowed") && strings.Contains(strings.ToLower(what), "quota"):
		return fmt.Errorf("%w: %s", platform.ErrInsufficientCapacity, what)
	case re.StatusCode == http.StatusNotFound || containsCode(notFoundCodes, code):
		return fmt.Errorf("%w: %s", platform.ErrNotFound, what)
	case re.StatusCode == http.StatusPreconditionFailed:
		// A create with If-None-Match found the resource there: the next
		// look finds whose it is.
		return platform.WithRetryAfter(fmt.Errorf("%w: %s", platform.ErrUnavailable, what), time.Second)
	case re.StatusCode == http.StatusConflict && !strings.EqualFold(code, "PropertyChangeNotAllowed"):
		// ARM answers 409 for an operation that conflicts with another
		// one still running: tried again later.
		return platform.WithRetryAfter(fmt.Errorf("%w: %s; trying again after %s", platform.ErrUnavailable, what, throttledRetry), throttledRetry)
	case re.StatusCode == http.StatusBadRequest || re.StatusCode == http.StatusConflict:
		return fmt.Errorf("%w: %s", platform.ErrInvalid, what)
	}
	return fmt.Errorf("%s", what)
}

// retryAfter reads a response's Retry-After (seconds or an HTTP date); the
// default when it has none.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return throttledRetry
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return throttledRetry
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return throttledRetry
}

// armMessage is the message of an ARM error body ({"error": {"code",
// "message"}}), or "".
func armMessage(re *azcore.ResponseError) string {
	if re.RawResponse == nil {
		return ""
	}
	body, err := runtime.Payload(re.RawResponse)
	if err != nil {
		return ""
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return firstLine(e.Error.Message)
}

func containsCode(codes []string, code string) bool {
	for _, c := range codes {
		if strings.EqualFold(c, code) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// isNotFound reports whether an ARM call failed because the resource does
// not exist.
func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}
