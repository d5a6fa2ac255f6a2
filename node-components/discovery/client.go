package discovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// userAgent is what the API server's logs and audit show for the agent.
const userAgent = "capwin-node/discovery"

// requestTimeout bounds one request, so a server that accepts the
// connection and never answers costs one attempt, not the whole timeout.
const requestTimeout = 15 * time.Second

var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s)
}()

// credentials is how a client connects: with no CA it does not verify the
// server (the first cluster-info read only); with no bearer it is
// anonymous. dial, when set, makes its connections (Options.DialContext).
type credentials struct {
	ca     []byte
	bearer string
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

// newClient returns a core/v1 REST client for host. No typed clientset:
// the agent binary stays small.
func newClient(host string, creds credentials) (rest.Interface, error) {
	cfg := &rest.Config{
		Host:        host,
		UserAgent:   userAgent,
		Timeout:     requestTimeout,
		BearerToken: creds.bearer,
		Dial:        creds.dial,
	}
	if creds.ca == nil {
		cfg.Insecure = true
	} else {
		cfg.CAData = creds.ca
	}
	return coreClient(cfg)
}

// coreClient returns a core/v1 REST client of cfg, decoding JSON into the
// k8s.io/api types.
func coreClient(cfg *rest.Config) (rest.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/api"
	cfg.ContentConfig = rest.ContentConfig{
		GroupVersion:         &corev1.SchemeGroupVersion,
		NegotiatedSerializer: codecs.WithoutConversion(),
		ContentType:          runtime.ContentTypeJSON,
		AcceptContentTypes:   runtime.ContentTypeJSON,
	}
	return rest.RESTClientFor(cfg)
}

// getConfigMap reads one ConfigMap. client-go's own retries (on
// Retry-After) are off: the caller's loop owns retries and the timeout.
func getConfigMap(ctx context.Context, c rest.Interface, namespace, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get().Namespace(namespace).Resource("configmaps").Name(name).MaxRetries(0).Do(ctx).Into(cm)
	if err != nil {
		return nil, err
	}
	return cm, nil
}

// statusCode is the HTTP status of an API error, 0 for a transport error.
func statusCode(err error) int {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return int(s.Status().Code)
	}
	return 0
}

// certificateRejected reports whether the TLS handshake failed because the
// server's certificate does not verify against the CA given.
func certificateRejected(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}
