package discovery

import (
	"net/url"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

var tokenPattern = regexp.MustCompile(bootstrapapi.BootstrapTokenPattern)

// token is a bootstrap token. Only its ID is public: the bearer string
// goes into the Authorization header and nowhere else.
type token struct {
	ID     string
	secret string
}

func (t token) bearer() string { return t.ID + "." + t.secret }

// String and GoString keep the secret out of any formatted value.
func (t token) String() string   { return t.ID + ".<secret>" }
func (t token) GoString() string { return t.String() }

// parseToken reads <id>.<secret>. Its error never echoes the input: a
// token that almost parses is still mostly secret.
func parseToken(s string) (token, error) {
	m := tokenPattern.FindStringSubmatch(s)
	if m == nil {
		return token{}, newError(ReasonInvalidJoin, nil,
			"the join token is not a bootstrap token: it must be 6 and 16 characters of [a-z0-9] joined by a dot")
	}
	return token{ID: m[1], secret: m[2]}, nil
}

// verifyClusterInfo checks the cluster-info ConfigMap the way kubeadm does:
// the signature for the token ID, computed by the bootstrap signer with
// the token secret, must match the kubeconfig; it returns that kubeconfig.
func verifyClusterInfo(cm *corev1.ConfigMap, t token, endpoint string) ([]byte, error) {
	kubeconfig := cm.Data[bootstrapapi.KubeConfigKey]
	if kubeconfig == "" {
		return nil, newError(ReasonBadClusterInfo, nil,
			"kube-public/%s at %s has no %q key: this API server is not set up for token discovery",
			bootstrapapi.ConfigMapClusterInfo, endpoint, bootstrapapi.KubeConfigKey)
	}
	key := bootstrapapi.JWSSignatureKeyPrefix + t.ID
	sig := cm.Data[key]
	if sig == "" {
		return nil, newError(ReasonNoSignature, nil,
			"kube-public/%s at %s has no signature for token ID %q (no %s key): the token is unknown to this cluster, has expired, or the bootstrap signer has not signed it yet; check the token with \"kubeadm token list\" on the control plane",
			bootstrapapi.ConfigMapClusterInfo, endpoint, t.ID, key)
	}
	if !jws.DetachedTokenIsValid(sig, kubeconfig, t.ID, t.secret) {
		return nil, newError(ReasonBadSignature, nil,
			"the signature of kube-public/%s at %s for token ID %q does not match the token secret: the node's token has the right ID but the wrong secret, or something between the node and the API server altered cluster-info; the node does not trust this API server",
			bootstrapapi.ConfigMapClusterInfo, endpoint, t.ID)
	}
	return []byte(kubeconfig), nil
}

// clusterFromKubeconfig returns the server and CA data of the cluster in
// cluster-info's kubeconfig: the unnamed cluster kubeadm writes, or the
// current context's.
func clusterFromKubeconfig(data []byte) (server string, ca []byte, err error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return "", nil, newError(ReasonBadClusterInfo, err, "the kubeconfig in kube-public/%s does not parse", bootstrapapi.ConfigMapClusterInfo)
	}
	cluster := cfg.Clusters[""]
	if cluster == nil {
		cluster = currentCluster(cfg)
	}
	if cluster == nil {
		return "", nil, newError(ReasonBadClusterInfo, nil,
			"the kubeconfig in kube-public/%s has no unnamed cluster and no current context naming one", bootstrapapi.ConfigMapClusterInfo)
	}
	u, err := url.Parse(cluster.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", nil, newError(ReasonBadClusterInfo, nil,
			"the kubeconfig in kube-public/%s names server %q, not an https URL", bootstrapapi.ConfigMapClusterInfo, cluster.Server)
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		return "", nil, newError(ReasonBadClusterInfo, nil,
			"the kubeconfig in kube-public/%s has no certificate-authority-data", bootstrapapi.ConfigMapClusterInfo)
	}
	return cluster.Server, cluster.CertificateAuthorityData, nil
}

func currentCluster(cfg *clientcmdapi.Config) *clientcmdapi.Cluster {
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return nil
	}
	return cfg.Clusters[ctx.Cluster]
}
