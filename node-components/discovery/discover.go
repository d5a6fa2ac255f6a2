package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

// The ConfigMap kubeadm init writes the cluster's KubeletConfiguration to,
// and its key (kubeadm's constants.KubeletBaseConfigurationConfigMap and
// KubeletBaseConfigurationConfigMapKey).
const (
	KubeletConfigMap    = "kubelet-config"
	KubeletConfigMapKey = "kubelet"
)

// Result is what discovery proved and fetched.
type Result struct {
	// Server is https://host:port the node will use: the server of
	// cluster-info's kubeconfig, as kubeadm writes it into the kubelet's
	// bootstrap kubeconfig.
	Server string
	// CACert is the PEM of the cluster CA certificates pinned by
	// caCertHashes.
	CACert []byte
	// KubeletConfig is the "kubelet" key of kube-system/kubelet-config (raw
	// YAML), read with the bootstrap token over the pinned CA.
	KubeletConfig []byte
}

// Options tune Discover; the zero value behaves as kubeadm join does.
type Options struct {
	// Timeout bounds the whole discovery; 5 minutes (kubeadm's) when zero.
	Timeout time.Duration
	// RetryInterval is the longest wait between two attempts; 5 s
	// (kubeadm's interval) when zero. The first retries come sooner.
	RetryInterval time.Duration
	// RefusalGrace is how long the API server's refusal to read
	// kube-system/kubelet-config (401, 403, 404) is retried before it is
	// believed: the API server learns of a new token Secret or RoleBinding
	// through an informer, a moment after it is created. 2 s when zero.
	RefusalGrace time.Duration
	// DialContext makes the connections of every HTTP client discovery
	// makes: Discover's, WaitForNode's and the ProgressWriter's (nil: the
	// default dialer). The simulation routes the control plane's address
	// to its API server with it.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 5 * time.Second
	}
	if o.RefusalGrace <= 0 {
		o.RefusalGrace = 2 * time.Second
	}
	return o
}

// Discover does kubeadm join's token discovery against join's endpoint:
//
//  1. read kube-public/cluster-info anonymously, without verifying the
//     server's certificate (the only such request; it never carries the
//     token), and check the token's signature on its kubeconfig;
//  2. pin the CA in that kubeconfig against join.CACertHashes;
//  3. read cluster-info again, anonymously, verifying the server with the
//     pinned CA, and require the same kubeconfig;
//  4. read kube-system/kubelet-config with the token, over the pinned CA,
//     from the server cluster-info names.
//
// Transient failures (no answer, server errors, no signature yet) are
// retried with backoff until Options.Timeout; a wrong CA hash or a
// signature that does not verify never are. Every failure is an *Error
// with a Reason; only the ending of ctx is not.
func Discover(ctx context.Context, join nodeconfig.Join, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	tok, err := parseToken(join.Token)
	if err != nil {
		return nil, err
	}
	pinned, err := parsePins(join.CACertHashes)
	if err != nil {
		return nil, err
	}
	endpoint, err := endpointURL(join.APIServerEndpoint)
	if err != nil {
		return nil, err
	}
	d := &discoverer{
		parent:   ctx,
		opts:     opts,
		token:    tok,
		endpoint: endpoint,
		log:      logr.FromContextOrDiscard(ctx).WithValues("endpoint", endpoint, "tokenID", tok.ID),
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	return d.run(ctx, pinned)
}

type discoverer struct {
	parent   context.Context
	opts     Options
	token    token
	endpoint string
	log      logr.Logger
}

func (d *discoverer) run(ctx context.Context, pinned pins) (*Result, error) {
	insecure, err := newClient(d.endpoint, credentials{dial: d.opts.DialContext})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", d.endpoint, err)
	}
	unverified, err := d.clusterInfo(ctx, insecure, false)
	if err != nil {
		return nil, err
	}
	server, bundle, err := clusterFromKubeconfig(unverified)
	if err != nil {
		return nil, err
	}
	ca, err := pinned.pinned(bundle)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Reason == ReasonCAMismatch {
			// The token signed this cluster-info: say where it points, so
			// that the agent can report the mismatch (Error.SignedClusterInfo).
			e.signedServer, e.signedCA = server, bundle
		}
		return nil, err
	}
	d.log.V(1).Info("Cluster-info is signed by the token and its CA is pinned", "server", server)

	secure, err := newClient(d.endpoint, credentials{ca: ca, dial: d.opts.DialContext})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", d.endpoint, err)
	}
	verified, err := d.clusterInfo(ctx, secure, true)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(verified, unverified) {
		return nil, newError(ReasonBadClusterInfo, nil,
			"the kubeconfig in kube-public/%s read over the pinned CA differs from the one read before: cluster-info changed in between, or the first answer did not come from %s; run the join again",
			bootstrapapi.ConfigMapClusterInfo, d.endpoint)
	}
	d.log.V(1).Info("Cluster-info read again over the pinned CA is the same")

	withToken, err := newClient(server, credentials{ca: ca, bearer: d.token.bearer(), dial: d.opts.DialContext})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", server, err)
	}
	kubelet, err := d.kubeletConfig(ctx, withToken, server)
	if err != nil {
		return nil, err
	}
	d.log.V(1).Info("Read the cluster's kubelet configuration", "server", server, "size", len(kubelet))
	return &Result{Server: server, CACert: ca, KubeletConfig: kubelet}, nil
}

// clusterInfo reads cluster-info until it carries a valid signature for the
// token; verified says the client checks the server against the pinned CA.
func (d *discoverer) clusterInfo(ctx context.Context, c rest.Interface, verified bool) ([]byte, error) {
	var kubeconfig []byte
	err := d.poll(ctx, "cluster-info", func(ctx context.Context) error {
		cm, err := getConfigMap(ctx, c, metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo)
		if err != nil {
			return d.clusterInfoError(err, verified)
		}
		kubeconfig, err = verifyClusterInfo(cm, d.token, d.endpoint)
		return err
	})
	return kubeconfig, err
}

func (d *discoverer) clusterInfoError(err error, verified bool) *Error {
	name := "kube-public/" + bootstrapapi.ConfigMapClusterInfo
	code := statusCode(err)
	switch {
	case verified && certificateRejected(err):
		return newError(ReasonUntrustedServer, err,
			"the API server at %s presents a certificate that the pinned cluster CA does not sign, or that is not valid for that address: the endpoint does not serve the cluster whose CA the node pinned", d.endpoint)
	case code == http.StatusNotFound:
		return newError(ReasonNoClusterInfo, err,
			"%s does not exist at %s: the control plane has not finished kubeadm init, or it is not a kubeadm cluster", name, d.endpoint)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return newError(ReasonNoClusterInfo, err,
			"the API server at %s does not let anonymous users read %s (HTTP %d): anonymous authentication is off, or the kubeadm:bootstrap-signer-clusterinfo Role and RoleBinding are missing", d.endpoint, name, code)
	default:
		return newError(ReasonUnreachable, err, "could not read %s from %s", name, d.endpoint)
	}
}

// kubeletConfig reads the cluster's KubeletConfiguration with the token.
func (d *discoverer) kubeletConfig(ctx context.Context, c rest.Interface, server string) ([]byte, error) {
	name := metav1.NamespaceSystem + "/" + KubeletConfigMap
	var data []byte
	err := d.poll(ctx, "kubelet-config", func(ctx context.Context) error {
		cm, err := getConfigMap(ctx, c, metav1.NamespaceSystem, KubeletConfigMap)
		if err != nil {
			return d.kubeletConfigError(err, server, name)
		}
		s := cm.Data[KubeletConfigMapKey]
		if s == "" {
			return newError(ReasonNoKubeletConfig, nil, "%s at %s has no %q key: the control plane did not write the cluster's kubelet configuration", name, server, KubeletConfigMapKey)
		}
		data = []byte(s)
		return nil
	})
	return data, err
}

func (d *discoverer) kubeletConfigError(err error, server, name string) *Error {
	switch code := statusCode(err); {
	case certificateRejected(err):
		return newError(ReasonUntrustedServer, err,
			"the API server at %s (the server named in cluster-info) presents a certificate that the pinned cluster CA does not sign, or that is not valid for that address", server)
	case code == http.StatusUnauthorized:
		return newError(ReasonTokenRejected, err,
			"the API server at %s refused bootstrap token %q when reading %s: the token has expired or was deleted, or it is not for authentication (usage-bootstrap-authentication); create a new token on the control plane",
			server, d.token.ID, name)
	case code == http.StatusForbidden:
		return newError(ReasonTokenRejected, err,
			"bootstrap token %q may not read %s at %s: the token lacks the group system:bootstrappers:kubeadm:default-node-token, or the kubeadm:kubelet-config Role and RoleBinding are missing",
			d.token.ID, name, server)
	case code == http.StatusNotFound:
		return newError(ReasonNoKubeletConfig, err,
			"%s does not exist at %s: the control plane did not write the cluster's kubelet configuration (kubeadm init's upload-config phase)", name, server)
	default:
		return newError(ReasonUnreachable, err, "could not read %s from %s", name, server)
	}
}

// poll runs attempt until it succeeds, fails for good or ctx (bounded by
// Options.Timeout) ends. Waits grow from half a second to RetryInterval.
func (d *discoverer) poll(ctx context.Context, step string, attempt func(context.Context) error) error {
	delay := min(500*time.Millisecond, d.opts.RetryInterval)
	var last *Error
	var refusedSince time.Time
	for {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		if ctx.Err() != nil {
			// This attempt was cut short; the one before says more.
			if last == nil {
				last = e
			}
			return d.gaveUp(last)
		}
		wait := delay
		switch {
		case e.retryable():
			delay = min(2*delay, d.opts.RetryInterval)
		case e.refusal():
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			if time.Since(refusedSince) >= d.opts.RefusalGrace {
				return e
			}
			wait = min(wait, d.opts.RefusalGrace/4)
		default:
			return e
		}
		last = e
		d.log.V(1).Info("Retrying", "step", step, "reason", e.Reason, "after", wait, "error", e.Error())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return d.gaveUp(last)
		case <-t.C:
		}
	}
}

// gaveUp is the error once the time is up: the last failure, with the
// time waited, or the caller's ending of the context.
func (d *discoverer) gaveUp(last *Error) error {
	if err := d.parent.Err(); err != nil {
		// The last failure is named, not wrapped: a discovery the caller
		// stopped has no Reason.
		return fmt.Errorf("discovery through %s stopped: %w (last failure: %s)", d.endpoint, context.Cause(d.parent), last.Error())
	}
	return &Error{
		Reason:  last.Reason,
		Message: fmt.Sprintf("%s (gave up after %s)", last.Message, d.opts.Timeout),
		Err:     last.Err,
	}
}

// endpointURL turns join's host:port into the URL kubeadm uses.
func endpointURL(endpoint string) (string, error) {
	host, port, err := net.SplitHostPort(endpoint)
	if err == nil && host != "" {
		if n, perr := strconv.Atoi(port); perr == nil && n > 0 && n < 65536 {
			return "https://" + net.JoinHostPort(host, port), nil
		}
	}
	return "", newError(ReasonInvalidJoin, nil, "apiServerEndpoint %q is not host:port", endpoint)
}
