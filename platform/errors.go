package platform

import (
	"errors"
	"time"
)

// The kinds of platform errors the reconcilers act on. A platform's own
// errors wrap one of them (NewError), so errors.Is(err, ErrNotFound) holds
// whatever the platform's words.
var (
	// ErrNotSupported: this build has no implementation of the platform the
	// spec names.
	ErrNotSupported = errors.New("platform not supported")
	// ErrCredentialsNotFound: the Secret or HybridClusterIdentity the
	// identityRef names does not exist or lacks a key.
	ErrCredentialsNotFound = errors.New("credentials not found")
	// ErrIdentityNotAllowed: the HybridClusterIdentity does not allow the
	// cluster's namespace.
	ErrIdentityNotAllowed = errors.New("identity does not allow the namespace")
	// ErrAuthentication: the platform refused the credentials.
	ErrAuthentication = errors.New("authentication failed")
	// ErrUnavailable: the platform cannot be reached or did not answer in
	// time; try again later (RetryAfter).
	ErrUnavailable = errors.New("platform unavailable")
	// ErrSessionExpired: the platform ended the session mid-reconcile; a
	// new one is opened on the next try, in a second.
	ErrSessionExpired = errors.New("session expired")
	// ErrNotFound: something the spec names (a template, a network, a
	// datacenter) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the spec cannot be made as it is.
	ErrInvalid = errors.New("invalid configuration")
	// ErrInsufficientCapacity: the platform lacks the capacity or quota
	// the machine needs.
	ErrInsufficientCapacity = errors.New("insufficient capacity")
	// ErrOperationFailed: a long-running operation failed.
	ErrOperationFailed = errors.New("operation failed")
	// ErrMachineGone: the VM of a provisioned machine no longer exists.
	ErrMachineGone = errors.New("the VM was deleted outside capwin")
)

// kindError is an error with its own words that is also of a kind.
type kindError struct {
	text string
	kind error
}

func (e *kindError) Error() string { return e.text }
func (e *kindError) Unwrap() error { return e.kind }

// NewError returns an error that reads text and is of kind (one of the
// Err values above): a platform's sentinel in its own words.
func NewError(kind error, text string) error { return &kindError{text: text, kind: kind} }

// retryError says when to try again.
type retryError struct {
	error
	after time.Duration
}

func (e *retryError) Unwrap() error { return e.error }

// WithRetryAfter returns err, to be tried again after d.
func WithRetryAfter(err error, d time.Duration) error { return &retryError{error: err, after: d} }

// RetryAfter is how soon to try again after err: what the platform said,
// or DefaultRetry.
func RetryAfter(err error) time.Duration {
	var r *retryError
	if errors.As(err, &r) && r.after > 0 {
		return r.after
	}
	return DefaultRetry
}
