package discovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

func TestDiscoverRejectsAnUnusableJoin(t *testing.T) {
	good := nodeconfig.Join{APIServerEndpoint: "10.0.0.10:6443", Token: testToken, CACertHashes: []string{caHash}}
	tests := []struct {
		name   string
		mutate func(*nodeconfig.Join)
		says   string
	}{
		{name: "token", mutate: func(j *nodeconfig.Join) { j.Token = "abcdef-" + testTokenSecret }, says: "not a bootstrap token"},
		{name: "no hash", mutate: func(j *nodeconfig.Join) { j.CACertHashes = nil }, says: "no caCertHashes"},
		{name: "endpoint without port", mutate: func(j *nodeconfig.Join) { j.APIServerEndpoint = "10.0.0.10" }, says: "not host:port"},
		{name: "endpoint as URL", mutate: func(j *nodeconfig.Join) { j.APIServerEndpoint = "https://10.0.0.10:6443" }, says: "not host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			join := good
			tt.mutate(&join)
			start := time.Now()
			_, err := Discover(context.Background(), join, Options{})
			if ReasonOf(err) != ReasonInvalidJoin || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Discover = %v, want InvalidJoin saying %q", err, tt.says)
			}
			if strings.Contains(err.Error(), testTokenSecret) {
				t.Errorf("the error shows the token secret: %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Discover took %s to reject a bad join; it must not wait", d)
			}
		})
	}
}

func TestPoll(t *testing.T) {
	unreachable := newError(ReasonUnreachable, errors.New("connection refused"), "could not read cluster-info from https://x:6443")
	noSignature := newError(ReasonNoSignature, nil, `no signature for token ID "abcdef"`)
	mismatch := newError(ReasonCAMismatch, nil, "pins sha256:aa, not sha256:bb")
	rejected := newError(ReasonTokenRejected, nil, "refused bootstrap token")
	opts := Options{Timeout: 600 * time.Millisecond, RetryInterval: 50 * time.Millisecond, RefusalGrace: 200 * time.Millisecond}

	tests := []struct {
		name string
		// results are what successive attempts return; the last repeats.
		results      []error
		wantReason   Reason
		wantAttempts func(int) bool
		wantGaveUp   bool
	}{
		{name: "success after transient failures", results: []error{unreachable, noSignature, nil}, wantAttempts: func(n int) bool { return n == 3 }},
		{name: "no signature until the timeout", results: []error{noSignature}, wantReason: ReasonNoSignature, wantGaveUp: true, wantAttempts: func(n int) bool { return n > 3 }},
		{name: "the last failure is reported", results: []error{noSignature, unreachable}, wantReason: ReasonUnreachable, wantGaveUp: true, wantAttempts: func(n int) bool { return n > 3 }},
		{name: "a CA mismatch is never retried", results: []error{unreachable, mismatch}, wantReason: ReasonCAMismatch, wantAttempts: func(n int) bool { return n == 2 }},
		{name: "a refusal is retried for the grace only", results: []error{rejected}, wantReason: ReasonTokenRejected, wantAttempts: func(n int) bool { return n >= 3 && n < 10 }},
		{name: "a refusal that clears up", results: []error{rejected, nil}, wantAttempts: func(n int) bool { return n == 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &discoverer{parent: context.Background(), opts: opts, endpoint: "https://x:6443"}
			ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
			defer cancel()
			n := 0
			err := d.poll(ctx, "test", func(context.Context) error {
				r := tt.results[min(n, len(tt.results)-1)]
				n++
				return r
			})
			if !tt.wantAttempts(n) {
				t.Errorf("%d attempts", n)
			}
			if ReasonOf(err) != tt.wantReason {
				t.Fatalf("poll = %v, want reason %q", err, tt.wantReason)
			}
			if got := err != nil && strings.Contains(err.Error(), "gave up after 600ms"); got != tt.wantGaveUp {
				t.Errorf("poll = %v; says it gave up: %v, want %v", err, got, tt.wantGaveUp)
			}
		})
	}

	t.Run("the caller's cancellation is not a Reason", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		d := &discoverer{parent: parent, opts: opts, endpoint: "https://x:6443"}
		ctx, cancel := context.WithTimeout(parent, opts.Timeout)
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancelParent)
		err := d.poll(ctx, "test", func(context.Context) error { return noSignature })
		if !errors.Is(err, context.Canceled) || ReasonOf(err) != "" || !strings.Contains(err.Error(), "no signature") {
			t.Fatalf("poll = %v, want context.Canceled naming the last failure", err)
		}
	})
}

func TestClassification(t *testing.T) {
	d := &discoverer{token: token{ID: testTokenID, secret: testTokenSecret}, endpoint: "https://10.0.0.10:6443"}
	cm := schema.GroupResource{Resource: "configmaps"}
	verifyErr := &url.Error{Op: "Get", URL: "https://10.0.0.10:6443/api/v1", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.10:6443/api/v1", Err: errors.New("dial tcp 10.0.0.10:6443: connect: connection refused")}

	clusterInfo := []struct {
		err      error
		verified bool
		want     Reason
	}{
		{refused, false, ReasonUnreachable},
		{refused, true, ReasonUnreachable},
		{verifyErr, true, ReasonUntrustedServer},
		{apierrors.NewNotFound(cm, "cluster-info"), false, ReasonNoClusterInfo},
		{apierrors.NewForbidden(cm, "cluster-info", errors.New("no")), false, ReasonNoClusterInfo},
		{apierrors.NewUnauthorized("no"), true, ReasonNoClusterInfo},
		{apierrors.NewInternalError(errors.New("etcd")), true, ReasonUnreachable},
		{apierrors.NewServiceUnavailable("starting"), false, ReasonUnreachable},
	}
	for _, tt := range clusterInfo {
		if got := d.clusterInfoError(tt.err, tt.verified); got.Reason != tt.want {
			t.Errorf("clusterInfoError(%v, verified=%v) = %s, want %s", tt.err, tt.verified, got.Reason, tt.want)
		}
	}

	kubelet := []struct {
		err  error
		want Reason
		says string
	}{
		{refused, ReasonUnreachable, "could not read kube-system/kubelet-config"},
		{verifyErr, ReasonUntrustedServer, "the server named in cluster-info"},
		{apierrors.NewUnauthorized("Unauthorized"), ReasonTokenRejected, "has expired or was deleted"},
		{apierrors.NewForbidden(cm, "kubelet-config", errors.New(`User "system:bootstrap:abcdef" cannot get`)), ReasonTokenRejected, "kubeadm:kubelet-config"},
		{apierrors.NewNotFound(cm, "kubelet-config"), ReasonNoKubeletConfig, "does not exist"},
		{apierrors.NewTooManyRequests("slow down", 1), ReasonUnreachable, "could not read"},
	}
	for _, tt := range kubelet {
		got := d.kubeletConfigError(tt.err, "https://cp:6443", "kube-system/kubelet-config")
		if got.Reason != tt.want || !strings.Contains(got.Error(), tt.says) {
			t.Errorf("kubeletConfigError(%v) = %s %q, want %s saying %q", tt.err, got.Reason, got, tt.want, tt.says)
		}
		if strings.Contains(got.Error(), testTokenSecret) || strings.Contains(fmt.Sprint(got), testTokenSecret) {
			t.Errorf("the error shows the token secret: %v", got)
		}
	}
}
