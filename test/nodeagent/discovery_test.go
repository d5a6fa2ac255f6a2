package nodeagent

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/test/kubeadm"
)

// discoveryUserAgent is the User-Agent of discovery's requests, as the
// audit log records it.
const discoveryUserAgent = "capwin-node/discovery"

var cluster *kubeadm.Cluster

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "capwin-nodeagent-")
	if err != nil {
		println(err.Error())
		return 1
	}
	defer os.RemoveAll(dir) //nolint:errcheck // a temporary directory
	start := time.Now()
	if cluster, err = kubeadm.Start(context.Background(), kubeadm.Options{Dir: dir, Audit: true, CSRControllers: true}); err != nil {
		println("starting the kubeadm cluster:", err.Error())
		return 1
	}
	fmt.Printf("kubeadm cluster at %s up in %s\n", cluster.Server, time.Since(start).Round(time.Millisecond))
	defer func() {
		if err := cluster.Stop(); err != nil {
			println("stopping the kubeadm cluster:", err.Error())
		}
	}()
	return m.Run()
}

// fast keeps the waits short: a case expecting a timeout waits 3 s.
var fast = discovery.Options{Timeout: 3 * time.Second, RetryInterval: 500 * time.Millisecond, RefusalGrace: 500 * time.Millisecond}

// outcome is one Discover: its result, what it logged, and its requests as
// the API server's audit log recorded them on arrival.
type outcome struct {
	result  *discovery.Result
	err     error
	took    time.Duration
	log     string
	audited []kubeadm.AuditEvent
}

// discover runs Discover and checks that no secret of secrets shows in its
// error or its log.
func discover(t *testing.T, join nodeconfig.Join, opts discovery.Options, secrets ...string) outcome {
	t.Helper()
	g := NewWithT(t)
	offset, err := cluster.AuditOffset()
	g.Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var buf bytes.Buffer
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(&buf, prefix, args)
	}, funcr.Options{Verbosity: 5})

	start := time.Now()
	res, err := discovery.Discover(logr.NewContext(context.Background(), logger), join, opts)
	o := outcome{result: res, err: err, took: time.Since(start)}
	t.Logf("Discover took %s: %v", o.took.Round(time.Millisecond), err)

	events, err := cluster.AuditEvents(offset)
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range events {
		if e.UserAgent == discoveryUserAgent && arrival(e) {
			o.audited = append(o.audited, e)
		}
	}
	mu.Lock()
	o.log = buf.String()
	mu.Unlock()
	for _, s := range secrets {
		if o.err != nil {
			g.Expect(strings.Contains(o.err.Error(), s)).To(BeFalse(), "the error shows a token secret")
		}
		g.Expect(strings.Contains(o.log, s)).To(BeFalse(), "the log shows a token secret")
	}
	return o
}

// arrival reports whether e is the first event of a request, so there is
// one per request: RequestReceived, or ResponseStarted for a request that
// failed authentication (audited from its 401 on, with no user).
func arrival(e kubeadm.AuditEvent) bool {
	return e.Stage == "RequestReceived" ||
		e.Stage == "ResponseStarted" && e.ResponseStatus != nil && e.ResponseStatus.Code == 401 && e.User.Username == ""
}

// expectFailure checks the Reason and that the message names the cause.
func (o outcome) expectFailure(g Gomega, reason discovery.Reason, says ...string) {
	g.Expect(o.err).To(HaveOccurred())
	g.Expect(discovery.ReasonOf(o.err)).To(Equal(reason), "error: %v", o.err)
	for _, s := range says {
		g.Expect(o.err.Error()).To(ContainSubstring(s))
	}
}

// reads returns the audited requests for a ConfigMap.
func (o outcome) reads(namespace, name string) []kubeadm.AuditEvent {
	var out []kubeadm.AuditEvent
	for _, e := range o.audited {
		if e.ObjectRef != nil && e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == namespace && e.ObjectRef.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func (o outcome) clusterInfoReads() []kubeadm.AuditEvent {
	return o.reads(metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo)
}

func (o outcome) kubeletConfigReads() []kubeadm.AuditEvent {
	return o.reads(metav1.NamespaceSystem, kubeadm.KubeletConfigMap)
}

func bootstrapUser(t kubeadm.Token) string { return bootstrapapi.BootstrapUserPrefix + t.ID }

// tokenUsed reports whether any request in the whole audit log
// authenticated with t.
func tokenUsed(g Gomega, t kubeadm.Token) bool {
	events, err := cluster.AuditEvents(0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(events).NotTo(BeEmpty())
	for _, e := range events {
		if e.User.Username == bootstrapUser(t) {
			return true
		}
	}
	return false
}

func createToken(g Gomega, ttl time.Duration) kubeadm.Token {
	tok, err := cluster.CreateToken(context.Background(), ttl)
	g.Expect(err).NotTo(HaveOccurred())
	return tok
}

func TestDiscover(t *testing.T) {
	ctx := context.Background()

	t.Run("right token and CA hash", func(t *testing.T) {
		g := NewWithT(t)
		tok := createToken(g, time.Hour)
		o := discover(t, cluster.Join(tok), fast, tok.Secret)
		g.Expect(o.err).NotTo(HaveOccurred())
		g.Expect(o.result.Server).To(Equal(cluster.Server))
		g.Expect(derOf(g, o.result.CACert)).To(Equal(derOf(g, cluster.CA)))
		g.Expect(string(o.result.KubeletConfig)).To(Equal(kubeadm.DefaultKubeletConfig))

		// cluster-info is read twice (unverified, then over the pinned
		// CA), both times anonymously; only kubelet-config is read with
		// the token.
		g.Expect(len(o.clusterInfoReads())).To(BeNumerically(">=", 2))
		g.Expect(o.kubeletConfigReads()).NotTo(BeEmpty())
		for _, e := range o.audited {
			if e.ObjectRef != nil && e.ObjectRef.Namespace == metav1.NamespaceSystem && e.ObjectRef.Name == kubeadm.KubeletConfigMap {
				continue
			}
			g.Expect(e.User.Username).To(Equal("system:anonymous"), "%s was sent with credentials", e.RequestURI)
		}
		last := o.kubeletConfigReads()[len(o.kubeletConfigReads())-1]
		g.Expect(last.User.Username).To(Equal(bootstrapUser(tok)))
		g.Expect(last.User.Groups).To(ContainElement(kubeadm.NodeBootstrapTokenGroup))
	})

	t.Run("wrong CA hash", func(t *testing.T) {
		g := NewWithT(t)
		tok := createToken(g, time.Hour)
		wrong := caHashOf(g, newCA(g, "not-this-cluster"))
		join := cluster.Join(tok)
		join.CACertHashes = []string{wrong}
		o := discover(t, join, fast, tok.Secret)
		o.expectFailure(g, discovery.ReasonCAMismatch, cluster.CAHash, wrong)
		g.Expect(o.took).To(BeNumerically("<", time.Second), "a CA mismatch is not retried")

		// The audit log saw the one anonymous, unverified cluster-info
		// read, and nothing ever authenticated with the token.
		g.Expect(o.audited).To(HaveLen(1))
		g.Expect(o.clusterInfoReads()).To(HaveLen(1))
		g.Expect(o.audited[0].User.Username).To(Equal("system:anonymous"))
		g.Expect(tokenUsed(g, tok)).To(BeFalse(), "a request carried the token")
	})

	t.Run("unknown token ID", func(t *testing.T) {
		g := NewWithT(t)
		tok := kubeadm.NewToken()
		o := discover(t, cluster.Join(tok), fast, tok.Secret)
		o.expectFailure(g, discovery.ReasonNoSignature, `token ID "`+tok.ID+`"`, "unknown to this cluster, has expired", "gave up after 3s")
		g.Expect(o.took).To(BeNumerically(">=", fast.Timeout))
		g.Expect(o.took).To(BeNumerically("<", fast.Timeout+2*time.Second))
		g.Expect(len(o.clusterInfoReads())).To(BeNumerically(">", 2), "retried until the timeout")
		g.Expect(o.kubeletConfigReads()).To(BeEmpty())
	})

	t.Run("right token ID, wrong secret", func(t *testing.T) {
		g := NewWithT(t)
		tok := createToken(g, time.Hour)
		wrong := kubeadm.Token{ID: tok.ID, Secret: kubeadm.NewToken().Secret}
		o := discover(t, cluster.Join(wrong), fast, tok.Secret, wrong.Secret)
		o.expectFailure(g, discovery.ReasonBadSignature, `token ID "`+tok.ID+`"`, "wrong secret")
		g.Expect(o.took).To(BeNumerically("<", time.Second), "a bad signature is not retried")
		g.Expect(o.audited).To(HaveLen(1))
		g.Expect(tokenUsed(g, tok)).To(BeFalse())
	})

	t.Run("expired token", func(t *testing.T) {
		g := NewWithT(t)
		tok := createToken(g, -time.Hour)
		o := discover(t, cluster.Join(tok), fast, tok.Secret)
		o.expectFailure(g, discovery.ReasonTokenRejected, `refused bootstrap token "`+tok.ID+`"`, "has expired", "kube-system/kubelet-config")
		// The API server's answer, not the agent's judgement: every read
		// with the token failed authentication.
		reads := o.kubeletConfigReads()
		g.Expect(reads).NotTo(BeEmpty())
		for _, e := range reads {
			g.Expect(e.ResponseStatus).NotTo(BeNil())
			g.Expect(e.ResponseStatus.Code).To(Equal(401))
		}
		g.Expect(tokenUsed(g, tok)).To(BeFalse(), "the API server accepted the expired token")
	})

	t.Run("cluster-info without any signature", func(t *testing.T) {
		g := NewWithT(t)
		tok := createToken(g, time.Hour)
		g.Expect(cluster.RemoveSignatures(ctx)).To(Succeed())
		defer func() { g.Expect(cluster.SignClusterInfo(ctx)).To(Succeed()) }()
		o := discover(t, cluster.Join(tok), fast, tok.Secret)
		o.expectFailure(g, discovery.ReasonNoSignature, `no signature for token ID "`+tok.ID+`"`, bootstrapapi.JWSSignatureKeyPrefix+tok.ID, "gave up after 3s")
		g.Expect(o.took).To(BeNumerically(">=", fast.Timeout))
	})

	t.Run("the signature appears while discovery waits", func(t *testing.T) {
		g := NewWithT(t)
		tok := createToken(g, time.Hour)
		g.Expect(cluster.RemoveSignatures(ctx)).To(Succeed())
		signed := make(chan error, 1)
		time.AfterFunc(time.Second, func() { signed <- cluster.SignClusterInfo(ctx) })
		o := discover(t, cluster.Join(tok), discovery.Options{Timeout: 30 * time.Second, RetryInterval: 500 * time.Millisecond}, tok.Secret)
		g.Expect(<-signed).To(Succeed())
		g.Expect(o.err).NotTo(HaveOccurred())
		g.Expect(o.took).To(BeNumerically(">=", time.Second))
		g.Expect(o.log).To(ContainSubstring(string(discovery.ReasonNoSignature)), "the wait is logged")
	})

	t.Run("unreachable endpoint", func(t *testing.T) {
		g := NewWithT(t)
		tok := createToken(g, time.Hour)
		endpoint := closedPort(g)
		join := cluster.Join(tok)
		join.APIServerEndpoint = endpoint
		o := discover(t, join, fast, tok.Secret)
		o.expectFailure(g, discovery.ReasonUnreachable, "https://"+endpoint, "connection refused", "gave up after 3s")
		g.Expect(o.took).To(BeNumerically(">=", fast.Timeout))
		g.Expect(o.took).To(BeNumerically("<", fast.Timeout+2*time.Second))
	})

	t.Run("cluster-info pins a CA that does not serve the endpoint", func(t *testing.T) {
		g := NewWithT(t)
		other := newCA(g, "other-ca")
		g.Expect(cluster.PublishClusterInfo(ctx, cluster.Server, other)).To(Succeed())
		defer func() { g.Expect(cluster.PublishClusterInfo(ctx, cluster.Server, cluster.CA)).To(Succeed()) }()
		tok := createToken(g, time.Hour)
		join := cluster.Join(tok)
		join.CACertHashes = []string{caHashOf(g, other)}
		o := discover(t, join, fast, tok.Secret)
		o.expectFailure(g, discovery.ReasonUntrustedServer, cluster.Server, "pinned cluster CA does not sign")
		g.Expect(o.took).To(BeNumerically("<", time.Second), "an untrusted server is not retried")
		g.Expect(tokenUsed(g, tok)).To(BeFalse())
	})

	t.Run("the server is cluster-info's, not the join endpoint", func(t *testing.T) {
		g := NewWithT(t)
		_, port, err := net.SplitHostPort(cluster.Endpoint)
		g.Expect(err).NotTo(HaveOccurred())
		// envtest's serving certificate is valid for localhost too.
		server := "https://localhost:" + port
		g.Expect(cluster.PublishClusterInfo(ctx, server, cluster.CA)).To(Succeed())
		defer func() { g.Expect(cluster.PublishClusterInfo(ctx, cluster.Server, cluster.CA)).To(Succeed()) }()
		tok := createToken(g, time.Hour)
		o := discover(t, cluster.Join(tok), fast, tok.Secret)
		g.Expect(o.err).NotTo(HaveOccurred())
		g.Expect(o.result.Server).To(Equal(server))
		g.Expect(string(o.result.KubeletConfig)).To(Equal(kubeadm.DefaultKubeletConfig))
	})
}

// closedPort is a local host:port nothing listens on.
func closedPort(g Gomega) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	return addr
}

// newCA is the PEM of a new self-signed CA certificate.
func newCA(g Gomega, name string) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func caHashOf(g Gomega, ca []byte) string {
	h, err := payload.CACertHash(ca)
	g.Expect(err).NotTo(HaveOccurred())
	return h
}

// derOf is the DER of every certificate of a PEM bundle, joined.
func derOf(g Gomega, bundle []byte) string {
	var der strings.Builder
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			break
		}
		der.Write(block.Bytes)
	}
	g.Expect(der.Len()).NotTo(BeZero())
	return der.String()
}
