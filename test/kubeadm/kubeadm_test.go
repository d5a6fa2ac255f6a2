package kubeadm

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var cluster *Cluster

func TestMain(m *testing.M) {
	ctx := context.Background()
	var err error
	cluster, err = Start(ctx, Options{Controllers: true})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	_ = cluster.Stop()
	if code != 0 {
		panic(code)
	}
}

func clusterInfo(g Gomega) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(cluster.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo}, cm)).To(Succeed())
	return cm.Data
}

// TestBootstrapSignerAndTokenCleaner: cluster-info is signed for a token
// as soon as it exists, and the token's signature and Secret go when it
// expires.
func TestBootstrapSignerAndTokenCleaner(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	// Its expiration is written to the second, so it lives 5 to 6 s: time
	// for a signer slowed by a busy machine to sign before it expires.
	tok, err := cluster.StoreToken(ctx, 6*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(clusterInfo(g)).To(HaveKey(bootstrapapi.JWSSignatureKeyPrefix + tok.ID))
	}, 4*time.Second, 100*time.Millisecond).Should(Succeed(), "the bootstrap signer signs for the new token")
	g.Eventually(func(g Gomega) {
		g.Expect(clusterInfo(g)).NotTo(HaveKey(bootstrapapi.JWSSignatureKeyPrefix + tok.ID))
		err := cluster.Env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + tok.ID}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the expired token's Secret is deleted: %v", err)
	}, 20*time.Second, 200*time.Millisecond).Should(Succeed())
}

func clientCSR(g Gomega, cs kubernetes.Interface, cn string) *certificatesv1.CertificateSigningRequest {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{NodesGroup}}}, key)
	g.Expect(err).NotTo(HaveOccurred())
	csr, err := cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return csr
}

// TestCSRApproverAndSigner: a join token's kubelet client CSR is approved
// and signed with the cluster CA, and the certificate authenticates as the
// node; a CSR from a user without the node client permission is left
// alone.
func TestCSRApproverAndSigner(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	tok, err := cluster.CreateToken(ctx, time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	cfg := rest.CopyConfig(cluster.Env.Config)
	cfg.CertData, cfg.KeyData, cfg.BearerToken = nil, nil, tok.String()
	cs := kubernetes.NewForConfigOrDie(cfg)
	// The API server learns of a new token through an informer.
	var csr *certificatesv1.CertificateSigningRequest
	g.Eventually(func(g Gomega) { csr = clientCSR(g, cs, "system:node:n1") }, 5*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Conditions).To(ContainElement(HaveField("Reason", "AutoApproved")))
		g.Expect(got.Status.Certificate).NotTo(BeEmpty())
		block, _ := pem.Decode(got.Status.Certificate)
		cert, err := x509.ParseCertificate(block.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cert.Subject.CommonName).To(Equal("system:node:n1"))
		pool := x509.NewCertPool()
		g.Expect(pool.AppendCertsFromPEM(cluster.CA)).To(BeTrue())
		_, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		g.Expect(err).NotTo(HaveOccurred(), "signed by the cluster CA")
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())

	other, err := cluster.Env.AddUser("someone")
	g.Expect(err).NotTo(HaveOccurred())
	ocs := kubernetes.NewForConfigOrDie(other)
	// A user who may post CSRs but not create node client certificates.
	g.Expect(cluster.Env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "someone-bootstrapper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "someone"}},
	})).To(Succeed())
	var refused *certificatesv1.CertificateSigningRequest
	g.Eventually(func(g Gomega) { refused = clientCSR(g, ocs, "system:node:n1") }, 5*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(cluster.Env.Client.Get(ctx, client.ObjectKeyFromObject(refused), refused)).To(Succeed())
		g.Expect(refused.Status.Conditions).To(BeEmpty(), "neither approved nor denied")
		g.Expect(refused.Status.Certificate).To(BeEmpty())
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestNodeRestriction: a kubelet with its own credentials may register its
// own Node, but not with a label NodeRestriction keeps from kubelets, and
// may not change another node's.
func TestNodeRestriction(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	nodeCfg, err := cluster.Env.AddUser("system:node:n2", NodesGroup)
	g.Expect(err).NotTo(HaveOccurred())
	cs := kubernetes.NewForConfigOrDie(nodeCfg)
	forbidden := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
	_, err = cs.CoreV1().Nodes().Create(ctx, forbidden, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("node-role.kubernetes.io/worker"))
	allowed := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"node.kubernetes.io/windows-build": "10.0.20348"}}}
	_, err = cs.CoreV1().Nodes().Create(ctx, allowed, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cluster.Env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}})).To(Succeed())
	_, err = cs.CoreV1().Nodes().Get(ctx, "n3", metav1.GetOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the Node authorizer lets a node read only its own Node: %v", err)
	n3 := &corev1.Node{}
	g.Expect(cluster.Env.Client.Get(ctx, client.ObjectKey{Name: "n3"}, n3)).To(Succeed())
	n3.Labels = map[string]string{"x": "y"}
	_, err = cs.CoreV1().Nodes().Update(ctx, n3, metav1.UpdateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(strings.ToLower(err.Error())).To(ContainSubstring("n3"))
}
