package discovery

import (
	"errors"
	"fmt"
)

// Reason says why discovery failed, for the agent to decide what to do and
// what to report.
type Reason string

const (
	// ReasonInvalidJoin means the join configuration itself is unusable (a token
	// or CA hash of the wrong form, no CA hash, a bad endpoint).
	ReasonInvalidJoin Reason = "InvalidJoin"
	// ReasonUnreachable means the API server did not answer, or answered with a
	// server error, until the timeout. Transient.
	ReasonUnreachable Reason = "Unreachable"
	// ReasonNoClusterInfo means kube-public/cluster-info is missing or anonymous
	// users may not read it (the control plane may still be initialising).
	ReasonNoClusterInfo Reason = "NoClusterInfo"
	// ReasonNoSignature means cluster-info carries no signature for the token ID:
	// the token is unknown, has expired, or is not signed yet.
	ReasonNoSignature Reason = "NoSignature"
	// ReasonBadSignature means the signature for the token ID does not verify
	// with the token's secret: a wrong secret, or cluster-info was altered.
	ReasonBadSignature Reason = "BadSignature"
	// ReasonBadClusterInfo means the signed kubeconfig in cluster-info is
	// malformed, or it changed between the unverified and the verified read.
	ReasonBadClusterInfo Reason = "BadClusterInfo"
	// ReasonCAMismatch means no CA in cluster-info has a pinned public key hash.
	ReasonCAMismatch Reason = "CAMismatch"
	// ReasonUntrustedServer means the API server's certificate does not verify
	// against the pinned CA (or is not valid for the endpoint's name).
	ReasonUntrustedServer Reason = "UntrustedServer"
	// ReasonTokenRejected means the API server refused the bootstrap token
	// (401: expired or deleted) or its permissions (403) when reading
	// kube-system/kubelet-config.
	ReasonTokenRejected Reason = "TokenRejected"
	// ReasonNoKubeletConfig means kube-system/kubelet-config or its "kubelet"
	// key is missing.
	ReasonNoKubeletConfig Reason = "NoKubeletConfig"
)

// Error is a discovery failure. Its message names the cause and what to
// check; it never holds the token secret (the token ID, which is public,
// may appear).
type Error struct {
	Reason  Reason
	Message string
	// Err is the underlying error, if any: an API or transport error.
	Err error

	// signedServer and signedCA are, for ReasonCAMismatch, the server and
	// the CA bundle of the kubeconfig in cluster-info, whose signature
	// with the token verified (SignedClusterInfo).
	signedServer string
	signedCA     []byte
}

// SignedClusterInfo returns, for a CA mismatch (ReasonCAMismatch), the
// server and CA bundle (PEM) of the cluster-info whose signature with the
// node's token verified: the cluster that the token belongs to, whatever
// the node pinned. ok is false for every other failure.
//
// The pin is not weakened by this: the join still fails. The agent uses
// them only to report that failure with the token, over TLS verified
// against that CA. That is safe: a valid signature proves the
// cluster-info came from someone who knows the token's secret; TLS
// verified against the CA inside it reaches only the holder of that CA's
// server key; so the token goes only to a party that knew it already.
func (e *Error) SignedClusterInfo() (server string, ca []byte, ok bool) {
	if e.Reason != ReasonCAMismatch || e.signedServer == "" || len(e.signedCA) == 0 {
		return "", nil, false
	}
	return e.signedServer, e.signedCA, true
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of a discovery Error in err's chain, or ""
// when there is none (the caller's context ended, say).
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func newError(reason Reason, cause error, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...), Err: cause}
}

// Retryable reports whether err is a discovery failure that may clear up
// by itself, so that discovery run again later may succeed: the API server
// not answering, cluster-info missing, the token not signed yet (reasons
// Unreachable, NoClusterInfo, NoSignature). A refusal of the token, a
// signature that does not verify or a CA that does not match is not.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.retryable()
}

// retryable reports whether a failure may clear up by itself: the API
// server or the bootstrap signer catching up.
func (e *Error) retryable() bool {
	switch e.Reason {
	case ReasonUnreachable, ReasonNoClusterInfo, ReasonNoSignature:
		return true
	}
	return false
}

// refusal reports whether a failure is the API server refusing the
// kubelet-config read, which is retried only for Options.RefusalGrace.
func (e *Error) refusal() bool {
	return e.Reason == ReasonTokenRejected || e.Reason == ReasonNoKubeletConfig
}
