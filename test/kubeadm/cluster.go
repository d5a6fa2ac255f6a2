// Package kubeadm is a workload cluster's control plane as kubeadm init
// leaves it for joining nodes: a real kube-apiserver with kubeadm's
// authentication, authorization and admission flags, kubeadm's bootstrap
// RBAC, the uploaded kubelet configuration and the signed cluster-info, and
// the controllers of kube-controller-manager a join depends on (the
// bootstrap signer, the token cleaner, the CSR approver and the kubelet
// client CSR signer).
package kubeadm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/test/envtest"
	"github.com/capwin/capwin/test/envtest/apiserver"
)

// Names kubeadm init gives the objects a join relies on
// (cmd/kubeadm/app/constants and phases/bootstraptoken).
const (
	// NodeBootstrapTokenGroup is the extra group of kubeadm's join tokens.
	NodeBootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"
	// NodesGroup is the group of every kubelet's client certificate.
	NodesGroup = "system:nodes"

	ClusterInfoRole   = "kubeadm:bootstrap-signer-clusterinfo"
	KubeletConfigRole = "kubeadm:kubelet-config"
	KubeletConfigMap  = "kubelet-config"
	// KubeletConfigKey is the key of KubeletConfigMap holding the
	// KubeletConfiguration.
	KubeletConfigKey = "kubelet"
)

// DefaultKubeletConfig is the KubeletConfiguration kubeadm init v1.36
// uploads with its defaults.
const DefaultKubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
resolvConf: /run/systemd/resolve/resolv.conf
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`

// auditPolicy records who asked for what (level Metadata), at every stage,
// for every user but the API server's own loopback client.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: ["system:apiserver"]
- level: Metadata
`

// Options describe a Cluster.
type Options struct {
	// Dir holds the audit policy and log when Audit is set.
	Dir string
	// Audit logs every request (see AuditEvents).
	Audit bool
	// KubeletConfig is the "kubelet" key of kube-system/kubelet-config;
	// DefaultKubeletConfig when empty.
	KubeletConfig string
	// Controllers runs kube-controller-manager's bootstrap signer, token
	// cleaner, CSR approver and kubelet client CSR signer (Controllers).
	// Without them nothing signs cluster-info but SignClusterInfo, nothing
	// deletes expired tokens and nothing approves or signs a CSR.
	Controllers bool
	// CSRControllers runs only the CSR approver and signer, for tests that
	// sign cluster-info themselves (SignClusterInfo, RemoveSignatures).
	CSRControllers bool
	// Log receives the controllers' logs; discarded when unset.
	Log logr.Logger
	// ServingIPs are addresses, besides 127.0.0.1, that the API server's
	// serving certificate is valid for: the control-plane endpoint that
	// joining nodes are given, which routes to this API server.
	ServingIPs []string
	// StopTimeout is the API server's (apiserver.Options); 10 s when zero.
	StopTimeout time.Duration
}

// Cluster is a workload cluster's API server as kubeadm init leaves it for
// joining nodes: bootstrap tokens authenticate, the Node authorizer and the
// NodeRestriction admission plugin judge kubelets, cluster-info is
// published and signed, the kubelet configuration is uploaded, and the RBAC
// rules let anonymous users read cluster-info and join tokens read the
// kubelet configuration, post CSRs and get Nodes.
type Cluster struct {
	Env *envtest.Environment
	// Endpoint is the API server's host:port, as a node configuration's
	// apiServerEndpoint names it; Server is https://Endpoint.
	Endpoint string
	Server   string
	// CA is the PEM of the cluster CA, which cluster-info publishes;
	// CAHash is its pin.
	CA     []byte
	CAHash string
	// ClusterCA is the cluster CA: it signs the API server's serving
	// certificate and the client certificates the API server trusts, the
	// admin's and, through the CSR signer, the kubelets'.
	ClusterCA *apiserver.CA
	// KubeletConfig is what kube-system/kubelet-config holds.
	KubeletConfig string
	// AuditLog is the API server's audit log when Options.Audit: JSON
	// lines, one per request and stage (see AuditEvents).
	AuditLog string

	stopControllers func() error
}

// APIServerArgs are the kube-apiserver flags of a kubeadm control plane a
// join depends on, and with audit an audit log in dir.
func APIServerArgs(dir string, audit bool) (map[string]string, error) {
	args := map[string]string{
		"enable-bootstrap-token-auth": "true",
		// kubeadm's modes and admission: kubelets read and write their own
		// Node and Lease through the Node authorizer, and NodeRestriction
		// limits the labels they may set, as in a real cluster.
		"authorization-mode":       "Node,RBAC",
		"enable-admission-plugins": "NodeRestriction",
		"anonymous-auth":           "true",
	}
	if !audit {
		return args, nil
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	args["audit-policy-file"] = policy
	args["audit-log-path"] = filepath.Join(dir, "audit.log")
	args["audit-log-format"] = "json"
	// Each event is written before the request is handled.
	args["audit-log-mode"] = "blocking"
	return args, nil
}

// Start starts an API server with APIServerArgs, sets it up as kubeadm init
// does and, with Options.Controllers, runs the controllers.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Audit && opts.Dir == "" {
		return nil, errors.New("kubeadm.Options.Dir is required for an audit log")
	}
	if opts.KubeletConfig == "" {
		opts.KubeletConfig = DefaultKubeletConfig
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	args, err := APIServerArgs(opts.Dir, opts.Audit)
	if err != nil {
		return nil, err
	}
	ca, err := apiserver.NewCA("kubernetes")
	if err != nil {
		return nil, err
	}
	env, err := envtest.Start(ctx, envtest.Options{WithoutCRDs: true, StopTimeout: opts.StopTimeout, APIServerArgs: args, CA: ca, ServingIPs: opts.ServingIPs})
	if err != nil {
		return nil, err
	}
	c, err := newCluster(ctx, env, opts.KubeletConfig)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	c.ClusterCA = ca
	c.AuditLog = args["audit-log-path"]
	if opts.Controllers || opts.CSRControllers {
		if c.stopControllers, err = c.runControllers(ctx, opts.Log, opts.Controllers); err != nil {
			_ = env.Stop()
			return nil, err
		}
	}
	return c, nil
}

func newCluster(ctx context.Context, env *envtest.Environment, kubeletConfig string) (*Cluster, error) {
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("envtest's API server URL %q: %w", env.Config.Host, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("envtest's API server URL %q has no host", env.Config.Host)
	}
	// The bootstrap provider's pin, computed apart from
	// node-components/discovery: the tests check that the two agree.
	hash, err := payload.CACertHash(env.Config.CAData)
	if err != nil {
		return nil, fmt.Errorf("envtest's serving CA: %w", err)
	}
	c := &Cluster{
		Env:           env,
		Endpoint:      u.Host,
		Server:        "https://" + u.Host,
		CA:            env.Config.CAData,
		CAHash:        hash,
		KubeletConfig: kubeletConfig,
	}
	// kube-public is created by the API server a moment after it serves.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespacePublic}, &corev1.Namespace{})
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for namespace %s: %w", metav1.NamespacePublic, err)
	}
	for _, obj := range kubeadmRBAC() {
		if err := env.Client.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	kc := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletConfigMap, Namespace: metav1.NamespaceSystem},
		Data:       map[string]string{KubeletConfigKey: kubeletConfig},
	}
	if err := env.Client.Create(ctx, kc); err != nil {
		return nil, fmt.Errorf("creating %s/%s: %w", kc.Namespace, kc.Name, err)
	}
	// kubeadm's kube-proxy addon phase: its ConfigMap, whose kubeconfig
	// (the control-plane endpoint, the pod's ServiceAccount token) other
	// add-ons mount, as cloud-provider-azure's Windows cloud-node-manager
	// does. The simulation runs no kube-proxy DaemonSet.
	kp := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: metav1.NamespaceSystem, Labels: map[string]string{"app": "kube-proxy"}},
		Data:       map[string]string{"kubeconfig.conf": kubeProxyKubeconfig(c.Server), "config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclientConnection:\n  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf\n"},
	}
	if err := env.Client.Create(ctx, kp); err != nil {
		return nil, fmt.Errorf("creating %s/%s: %w", kp.Namespace, kp.Name, err)
	}
	if err := c.PublishClusterInfo(ctx, c.Server, c.CA); err != nil {
		return nil, err
	}
	return c, nil
}

// Stop stops the controllers and the API server.
func (c *Cluster) Stop() error {
	var errs []error
	if c.stopControllers != nil {
		errs = append(errs, c.stopControllers())
	}
	return errors.Join(append(errs, c.Env.Stop())...)
}

// kubeadmRBAC is what kubeadm init grants anonymous users, join tokens and
// nodes (phases/bootstraptoken/clusterinfo, phases/bootstraptoken/node,
// phases/kubelet).
func kubeadmRBAC() []client.Object {
	get := func(resource string, names ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{resource}, ResourceNames: names}}
	}
	group := func(name string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.GroupKind, Name: name} }
	role := func(namespace, name string, rules []rbacv1.PolicyRule, subjects ...rbacv1.Subject) []client.Object {
		meta := metav1.ObjectMeta{Namespace: namespace, Name: name}
		return []client.Object{
			&rbacv1.Role{ObjectMeta: meta, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects},
		}
	}
	clusterBinding := func(name, clusterRole string, subject rbacv1.Subject) client.Object {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{subject},
		}
	}
	var objs []client.Object
	objs = append(objs, role(metav1.NamespacePublic, ClusterInfoRole, get("configmaps", bootstrapapi.ConfigMapClusterInfo),
		rbacv1.Subject{Kind: rbacv1.UserKind, Name: "system:anonymous"})...)
	objs = append(objs, role(metav1.NamespaceSystem, KubeletConfigRole, get("configmaps", KubeletConfigMap),
		group(NodesGroup), group(NodeBootstrapTokenGroup))...)
	objs = append(objs,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"}, Rules: get("nodes")},
		clusterBinding("kubeadm:get-nodes", "kubeadm:get-nodes", group(NodeBootstrapTokenGroup)),
		clusterBinding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group(NodeBootstrapTokenGroup)),
		clusterBinding("kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group(NodeBootstrapTokenGroup)),
		clusterBinding("kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", group(NodesGroup)),
	)
	return objs
}

// Token is a bootstrap token.
type Token struct {
	ID, Secret string
}

// String is the token as a node configuration holds it: id.secret.
func (t Token) String() string { return t.ID + "." + t.Secret }

// NewToken returns a random token, not stored in the cluster.
func NewToken() Token {
	s, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		panic(err) // crypto/rand failing
	}
	id, secret, _ := strings.Cut(s, ".")
	return Token{ID: id, Secret: secret}
}

// CreateToken stores a new join token as kubeadm token create does, valid
// for ttl (already expired when ttl is negative), with extraGroups besides
// kubeadm's node group, and signs cluster-info
// for it as the bootstrap signer does. The signer skips expired tokens, but
// the signature of a token that expired after it was signed stays until
// the signer runs again; CreateToken signs regardless, which is that case.
func (c *Cluster) CreateToken(ctx context.Context, ttl time.Duration, extraGroups ...string) (Token, error) {
	t, err := c.StoreToken(ctx, ttl, extraGroups...)
	if err != nil {
		return Token{}, err
	}
	return t, c.SignClusterInfo(ctx)
}

// StoreToken stores a new join token as CreateToken does, without signing
// cluster-info for it: that is left to the bootstrap signer, if it runs.
func (c *Cluster) StoreToken(ctx context.Context, ttl time.Duration, extraGroups ...string) (Token, error) {
	t := NewToken()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(t.ID), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:               []byte(t.ID),
			bootstrapapi.BootstrapTokenSecretKey:           []byte(t.Secret),
			bootstrapapi.BootstrapTokenExpirationKey:       []byte(time.Now().Add(ttl).UTC().Format(time.RFC3339)),
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
			bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(strings.Join(append([]string{NodeBootstrapTokenGroup}, extraGroups...), ",")),
			bootstrapapi.BootstrapTokenDescriptionKey:      []byte("capwin test join token"),
		},
	}
	if err := c.Env.Client.Create(ctx, s); err != nil {
		return Token{}, fmt.Errorf("creating bootstrap token %s: %w", t.ID, err)
	}
	return t, nil
}

// Join is the join section a node configuration carries for t.
func (c *Cluster) Join(t Token) nodeconfig.Join {
	return nodeconfig.Join{APIServerEndpoint: c.Endpoint, Token: t.String(), CACertHashes: []string{c.CAHash}}
}

// PublishClusterInfo writes kube-public/cluster-info as kubeadm init does,
// its kubeconfig naming server and ca, and signs it for every token.
func (c *Cluster) PublishClusterInfo(ctx context.Context, server string, ca []byte) error {
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"": {Server: server, CertificateAuthorityData: ca}},
	})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic}}
	err = c.updateClusterInfo(ctx, func(data map[string]string) {
		clear(data)
		data[bootstrapapi.KubeConfigKey] = string(kubeconfig)
	})
	if apierrors.IsNotFound(err) {
		cm.Data = map[string]string{bootstrapapi.KubeConfigKey: string(kubeconfig)}
		err = c.Env.Client.Create(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("publishing cluster-info: %w", err)
	}
	return c.SignClusterInfo(ctx)
}

// SignClusterInfo signs cluster-info's kubeconfig for every bootstrap token
// for signing, and removes the signatures of tokens that are gone, as the
// bootstrap signer does (but for expired tokens: see CreateToken).
func (c *Cluster) SignClusterInfo(ctx context.Context) error {
	secrets := &corev1.SecretList{}
	if err := c.Env.Client.List(ctx, secrets, client.InNamespace(metav1.NamespaceSystem)); err != nil {
		return fmt.Errorf("listing bootstrap tokens: %w", err)
	}
	var signErr error
	err := c.updateClusterInfo(ctx, func(data map[string]string) {
		removeSignatures(data)
		for _, s := range secrets.Items {
			if s.Type != bootstrapapi.SecretTypeBootstrapToken || string(s.Data[bootstrapapi.BootstrapTokenUsageSigningKey]) != "true" {
				continue
			}
			id, secret := string(s.Data[bootstrapapi.BootstrapTokenIDKey]), string(s.Data[bootstrapapi.BootstrapTokenSecretKey])
			sig, err := jws.ComputeDetachedSignature(data[bootstrapapi.KubeConfigKey], id, secret)
			if err != nil {
				signErr = err
				return
			}
			data[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
		}
	})
	if err == nil {
		err = signErr
	}
	if err != nil {
		return fmt.Errorf("signing cluster-info: %w", err)
	}
	return nil
}

// RemoveSignatures leaves cluster-info unsigned, as it is before the
// bootstrap signer first runs.
func (c *Cluster) RemoveSignatures(ctx context.Context) error {
	return c.updateClusterInfo(ctx, removeSignatures)
}

func removeSignatures(data map[string]string) {
	for k := range data {
		if strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) {
			delete(data, k)
		}
	}
}

func (c *Cluster) updateClusterInfo(ctx context.Context, mutate func(map[string]string)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		if err := c.Env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo}, cm); err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		mutate(cm.Data)
		return c.Env.Client.Update(ctx, cm)
	})
}

// AuditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type AuditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// AuditOffset is where the audit log ends now: AuditEvents(AuditOffset())
// later returns what happened in between.
func (c *Cluster) AuditOffset() (int64, error) {
	fi, err := os.Stat(c.AuditLog)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// AuditEvents returns the audit events logged from offset on. An event is
// written before its request is handled (audit-log-mode blocking), so once
// a client has its answer, its request is in the log.
func (c *Cluster) AuditEvents(offset int64) ([]AuditEvent, error) {
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var events []AuditEvent
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return events, nil // a line being written is not complete yet
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", c.AuditLog, err)
		}
		events = append(events, e)
	}
}

// kubeProxyKubeconfig is the kubeconfig.conf of kubeadm's kube-proxy
// ConfigMap: the API server, and the pod's ServiceAccount CA and token.
func kubeProxyKubeconfig(server string) string {
	return `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: ` + server + `
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`
}
