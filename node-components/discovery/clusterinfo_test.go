package discovery

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

const (
	testTokenID     = "abcdef"
	testTokenSecret = "0123456789abcdef"
	testToken       = testTokenID + "." + testTokenSecret
)

// clusterInfoKubeconfig is what kubeadm init writes into cluster-info: one
// unnamed cluster.
func clusterInfoKubeconfig(t *testing.T, server string, ca []byte) string {
	t.Helper()
	data, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{
		"": {Server: server, CertificateAuthorityData: ca},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// signedClusterInfo is cluster-info as the bootstrap signer leaves it, with
// signatures for the given id.secret tokens.
func signedClusterInfo(t *testing.T, kubeconfig string, tokens ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{Data: map[string]string{bootstrapapi.KubeConfigKey: kubeconfig}}
	for _, tok := range tokens {
		id, secret, _ := strings.Cut(tok, ".")
		sig, err := jws.ComputeDetachedSignature(kubeconfig, id, secret)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
	}
	return cm
}

func TestParseToken(t *testing.T) {
	tok, err := parseToken(testToken)
	if err != nil || tok.ID != testTokenID || tok.bearer() != testToken {
		t.Fatalf("parseToken = %#v, %v", tok, err)
	}
	for _, formatted := range []string{tok.String(), tok.GoString()} {
		if strings.Contains(formatted, testTokenSecret) {
			t.Errorf("a formatted token shows its secret: %s", formatted)
		}
	}
	for _, bad := range []string{"", "abcdef", "ABCDEF." + testTokenSecret, "abcdef:" + testTokenSecret, testToken + "0", "abcde." + testTokenSecret} {
		_, err := parseToken(bad)
		if ReasonOf(err) != ReasonInvalidJoin {
			t.Errorf("parseToken(%q) = %v, want InvalidJoin", bad, err)
			continue
		}
		if bad != "" && strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), testTokenSecret) {
			t.Errorf("parseToken's error echoes the token: %v", err)
		}
	}
}

func TestVerifyClusterInfo(t *testing.T) {
	ca, err := os.ReadFile("testdata/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := clusterInfoKubeconfig(t, "https://10.0.0.10:6443", ca)
	tok, _ := parseToken(testToken)

	tests := []struct {
		name   string
		cm     *corev1.ConfigMap
		reason Reason
		says   string
	}{
		{name: "signed for the token", cm: signedClusterInfo(t, kubeconfig, "zzzzzz.zzzzzzzzzzzzzzzz", testToken)},
		{name: "no signature at all", cm: signedClusterInfo(t, kubeconfig), reason: ReasonNoSignature, says: `no signature for token ID "abcdef"`},
		{name: "signed for other tokens only", cm: signedClusterInfo(t, kubeconfig, "zzzzzz."+testTokenSecret), reason: ReasonNoSignature, says: "jws-kubeconfig-abcdef"},
		{name: "signed with another secret", cm: signedClusterInfo(t, kubeconfig, testTokenID+".ffffffffffffffff"), reason: ReasonBadSignature, says: "wrong secret"},
		{name: "signature of other content", cm: func() *corev1.ConfigMap {
			cm := signedClusterInfo(t, kubeconfig, testToken)
			cm.Data[bootstrapapi.KubeConfigKey] = clusterInfoKubeconfig(t, "https://attacker:6443", ca)
			return cm
		}(), reason: ReasonBadSignature, says: "does not match the token secret"},
		{name: "no kubeconfig", cm: &corev1.ConfigMap{Data: map[string]string{"jws-kubeconfig-abcdef": "x..y"}}, reason: ReasonBadClusterInfo, says: `no "kubeconfig" key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := verifyClusterInfo(tt.cm, tok, "https://10.0.0.10:6443")
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.cm.Data[bootstrapapi.KubeConfigKey] {
					t.Errorf("verifyClusterInfo returned another kubeconfig")
				}
				return
			}
			if ReasonOf(err) != tt.reason || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("verifyClusterInfo = %v, want %s saying %q", err, tt.reason, tt.says)
			}
			if strings.Contains(err.Error(), testTokenSecret) {
				t.Errorf("the error shows the token secret: %v", err)
			}
		})
	}
}

func TestClusterFromKubeconfig(t *testing.T) {
	ca, err := os.ReadFile("testdata/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	named := func(server string, ca []byte) string {
		data, err := clientcmd.Write(clientcmdapi.Config{
			Clusters:       map[string]*clientcmdapi.Cluster{"kubernetes": {Server: server, CertificateAuthorityData: ca}},
			Contexts:       map[string]*clientcmdapi.Context{"default": {Cluster: "kubernetes"}},
			CurrentContext: "default",
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	tests := []struct {
		name       string
		kubeconfig string
		server     string
		says       string
	}{
		{name: "unnamed cluster, as kubeadm writes", kubeconfig: clusterInfoKubeconfig(t, "https://cp.example:6443", ca), server: "https://cp.example:6443"},
		{name: "current context", kubeconfig: named("https://10.0.0.1:6443", ca), server: "https://10.0.0.1:6443"},
		{name: "plain http", kubeconfig: clusterInfoKubeconfig(t, "http://cp.example:6443", ca), says: "not an https URL"},
		{name: "no CA", kubeconfig: clusterInfoKubeconfig(t, "https://cp.example:6443", nil), says: "no certificate-authority-data"},
		{name: "no cluster", kubeconfig: "apiVersion: v1\nkind: Config\n", says: "no unnamed cluster"},
		{name: "not a kubeconfig", kubeconfig: "{", says: "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, gotCA, err := clusterFromKubeconfig([]byte(tt.kubeconfig))
			if tt.says != "" {
				if ReasonOf(err) != ReasonBadClusterInfo || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("clusterFromKubeconfig = %v, want BadClusterInfo saying %q", err, tt.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if server != tt.server || string(gotCA) != string(ca) {
				t.Errorf("clusterFromKubeconfig = %s and %d bytes of CA, want %s and ca.crt", server, len(gotCA), tt.server)
			}
		})
	}
}
