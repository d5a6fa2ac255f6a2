package kubeadm

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
)

// KubeletTLSBootstrap is a Windows kubelet's TLS bootstrap on a host: with
// the bootstrap kubeconfig it posts a client CSR for system:node:<name>,
// waits until the controller manager has approved and signed it, and
// writes the certificate and its key (layout.KubeletClientCert) and
// kubelet.conf (kubeconfigPath) naming them by their Windows paths, as the
// kubelet does. It returns the CSR as posted.
func KubeletTLSBootstrap(ctx context.Context, fsys host.FS, bootstrapKubeconfig []byte, kubeconfigPath, name string) (*certificatesv1.CertificateSigningRequest, error) {
	rc, err := clientcmd.RESTConfigFromKubeConfig(bootstrapKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the bootstrap kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + name, Organization: []string{NodesGroup}}}, key)
	if err != nil {
		return nil, err
	}
	csr, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("posting its client CSR with the bootstrap token: %w", err)
	}
	var cert []byte
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		c, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the kubelet keeps waiting
		}
		cert = c.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for CSR %s to be signed: %w", csr.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	pair := append(append([]byte{}, cert...), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if err := fsys.WriteFile(layout.KubeletClientCert, pair, true); err != nil {
		return nil, err
	}
	kubeconfig, err := KubeletKubeconfig(rc.Host)
	if err != nil {
		return nil, err
	}
	return csr, fsys.WriteFile(kubeconfigPath, kubeconfig, true)
}

// KubeletKubeconfig is kubelet.conf as the kubelet writes it after its TLS
// bootstrap: server, and the CA and client certificate by their Windows
// paths.
func KubeletKubeconfig(server string) ([]byte, error) {
	return clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {Server: server, CertificateAuthority: layout.CACert}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {
			ClientCertificate: layout.KubeletClientCert, ClientKey: layout.KubeletClientCert,
		}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth"}},
		CurrentContext: "default-context",
	})
}

// KubeletClient is a client with the kubelet's own credentials: its
// kubeconfig at kubeconfigPath on the host, with the Windows paths it names
// read through the host.
func KubeletClient(fsys host.FS, kubeconfigPath string) (kubernetes.Interface, error) {
	kubeconfig, err := fsys.ReadFile(kubeconfigPath)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, a := range cfg.AuthInfos {
		if a.ClientCertificateData, err = fsys.ReadFile(a.ClientCertificate); err != nil {
			return nil, err
		}
		a.ClientKeyData, a.ClientCertificate, a.ClientKey = a.ClientCertificateData, "", ""
	}
	for _, c := range cfg.Clusters {
		if c.CertificateAuthorityData, err = fsys.ReadFile(c.CertificateAuthority); err != nil {
			return nil, err
		}
		c.CertificateAuthority = ""
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}
