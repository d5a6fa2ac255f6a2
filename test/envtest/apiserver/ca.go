package apiserver

import (
	"crypto"
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
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CA is a cluster CA, as kubeadm makes one: it issues the API server's
// serving certificate and the client certificates the API server trusts
// (--client-ca-file). The environment's own users (its admin, AddUser)
// get their certificates from it, and a test may issue other clients'
// certificates with it, as kube-controller-manager's CSR signer issues
// kubelets' client certificates with the cluster CA.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

// NewCA makes a CA whose certificate names name and is valid for ten
// years.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("making the client CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand failing
	}
	return n
}

// CertPEM is the CA's certificate.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// serving writes into dir the API server's serving certificate and key,
// for localhost, 127.0.0.1 and ips, and the service account signing key
// pair: what envtest writes there itself unless apiserver.crt exists.
func (ca *CA) serving(dir string, ips []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	for _, ip := range ips {
		p := net.ParseIP(ip)
		if p == nil {
			return fmt.Errorf("serving IP %q is not an IP address", ip)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, p)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return fmt.Errorf("issuing the API server's serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saDER, err := x509.MarshalECPrivateKey(sa)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return err
	}
	for name, block := range map[string]*pem.Block{
		"apiserver.crt": {Type: "CERTIFICATE", Bytes: der},
		"apiserver.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
		"sa-signer.key": {Type: "EC PRIVATE KEY", Bytes: saDER},
		"sa-signer.crt": {Type: "PUBLIC KEY", Bytes: saPub},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Issue signs a client certificate for pub with subject, valid from now
// until now+validity, and returns its PEM.
func (ca *CA) Issue(pub crypto.PublicKey, subject pkix.Name, validity time.Duration) ([]byte, error) {
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("issuing a client certificate for %s: %w", subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// caAuthn is envtest's certificate authentication with a CA of the
// test's own (envtest's keeps its CA key to itself).
type caAuthn struct {
	ca   *CA
	path string
}

var _ envtest.Authn = &caAuthn{}

func (a *caAuthn) Configure(workDir string, args *envtest.Arguments) error {
	a.path = filepath.Join(workDir, "client-ca.crt")
	args.Set("client-ca-file", a.path)
	return nil
}

func (a *caAuthn) Start() error {
	if a.path == "" {
		return fmt.Errorf("the client CA authenticator was started before it was configured")
	}
	return os.WriteFile(a.path, a.ca.CertPEM(), 0o600)
}

func (a *caAuthn) AddUser(user envtest.User, base *rest.Config) (*rest.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cert, err := a.ca.Issue(key.Public(), pkix.Name{CommonName: user.Name, Organization: user.Groups}, 24*time.Hour*365)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(base)
	cfg.CertData = cert
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	return cfg, nil
}

func (a *caAuthn) Stop() error { return nil }
