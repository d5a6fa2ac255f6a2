package kubeadm

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwin/capwin/test/envtest/apiserver"
)

// SigningDuration is how long the CSR signer's certificates are valid
// unless a CSR asks for less: kube-controller-manager's
// --cluster-signing-duration default, a year.
const SigningDuration = 365 * 24 * time.Hour

// runControllers runs, against the cluster, what kube-controller-manager
// runs of a kubeadm cluster's controllers for joining nodes:
//
//   - the bootstrap signer (pkg/controller/bootstrap/bootstrapsigner.go)
//     signs cluster-info's kubeconfig for every unexpired token meant for
//     signing, and removes the other signatures;
//   - the token cleaner (tokencleaner.go) deletes expired tokens;
//   - the CSR approver (pkg/controller/certificates/approver/sarapprove.go)
//     approves kubelet client CSRs whose requester a SubjectAccessReview
//     allows to create certificatesigningrequests/nodeclient (or, for a
//     kubelet renewing its own, selfnodeclient), and leaves any other CSR
//     alone;
//   - the signer (pkg/controller/certificates/signer) issues approved
//     kubelet client CSRs with the cluster CA.
//
// Without tokens, only the last two run.
func (c *Cluster) runControllers(ctx context.Context, log logr.Logger, tokens bool) (func() error, error) {
	mgr, err := c.Env.NewManager(func(o *manager.Options) {
		o.Logger = log
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.Secret{}:    {Namespaces: map[string]cache.Config{metav1.NamespaceSystem: {}}},
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{metav1.NamespacePublic: {}}},
		}
	})
	if err != nil {
		return nil, err
	}
	c2 := mgr.GetClient()
	clusterInfo := func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo}}}
	}
	isClusterInfo := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == metav1.NamespacePublic && o.GetName() == bootstrapapi.ConfigMapClusterInfo
	})
	isToken := predicate.NewPredicateFuncs(func(o client.Object) bool {
		s, ok := o.(*corev1.Secret)
		return ok && s.Type == bootstrapapi.SecretTypeBootstrapToken
	})
	err = ctrl.NewControllerManagedBy(mgr).Named("csrapproving").
		For(&certificatesv1.CertificateSigningRequest{}).
		Complete(&csrController{c: c2, ca: c.ClusterCA})
	if tokens {
		err = errors.Join(err,
			ctrl.NewControllerManagedBy(mgr).Named("bootstrapsigner").
				For(&corev1.ConfigMap{}, builder.WithPredicates(isClusterInfo)).
				Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(clusterInfo), builder.WithPredicates(isToken)).
				Complete(&bootstrapSigner{c: c2}),
			ctrl.NewControllerManagedBy(mgr).Named("tokencleaner").
				For(&corev1.Secret{}, builder.WithPredicates(isToken)).
				Complete(&tokenCleaner{c: c2}),
		)
	}
	if err != nil {
		return nil, fmt.Errorf("setting up the controller manager's controllers: %w", err)
	}
	return c.Env.StartManager(context.WithoutCancel(ctx), mgr)
}

// bootstrapSigner is kube-controller-manager's bootstrap signer.
type bootstrapSigner struct{ c client.Client }

func (b *bootstrapSigner) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := b.c.Get(ctx, req.NamespacedName, cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	kubeconfig, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok {
		return reconcile.Result{}, nil
	}
	secrets := &corev1.SecretList{}
	if err := b.c.List(ctx, secrets, client.InNamespace(metav1.NamespaceSystem)); err != nil {
		return reconcile.Result{}, err
	}
	now := time.Now()
	want := map[string]string{}
	var next time.Duration
	for i := range secrets.Items {
		s := &secrets.Items[i]
		id, secret, left, ok := signingToken(s, now)
		if !ok {
			continue
		}
		sig, err := jws.ComputeDetachedSignature(kubeconfig, id, secret)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("signing cluster-info for token %s: %w", id, err)
		}
		want[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
		if left > 0 && (next == 0 || left < next) {
			next = left
		}
	}
	have := map[string]string{}
	for k, v := range cm.Data {
		if strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) {
			have[k] = v
		}
	}
	// An expiring token's signature goes when it expires.
	result := reconcile.Result{RequeueAfter: next}
	if maps.Equal(have, want) {
		return result, nil
	}
	for k := range have {
		delete(cm.Data, k)
	}
	maps.Copy(cm.Data, want)
	return result, b.c.Update(ctx, cm)
}

// signingToken returns a token Secret's ID and secret, and how long until
// it expires (0: never), if the bootstrap signer signs for it: the
// signer's validateSecretForSigning.
func signingToken(s *corev1.Secret, now time.Time) (id, secret string, left time.Duration, ok bool) {
	if s.Type != bootstrapapi.SecretTypeBootstrapToken {
		return "", "", 0, false
	}
	nameID, ok := bootstrapsecrets.ParseName(s.Name)
	if !ok {
		return "", "", 0, false
	}
	id = bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenIDKey)
	secret = bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenSecretKey)
	if id == "" || id != nameID || secret == "" {
		return "", "", 0, false
	}
	if bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenUsageSigningKey) != "true" {
		return "", "", 0, false
	}
	left, expired := bootstrapsecrets.GetExpiration(s, now)
	if expired {
		return "", "", 0, false
	}
	return id, secret, left, true
}

// tokenCleaner is kube-controller-manager's token cleaner.
type tokenCleaner struct{ c client.Client }

func (t *tokenCleaner) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &corev1.Secret{}
	if err := t.c.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	left, expired := bootstrapsecrets.GetExpiration(s, time.Now())
	if !expired {
		// -1: no expiration.
		return reconcile.Result{RequeueAfter: max(left, 0)}, nil
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleting expired bootstrap token", "secret", s.Name)
	return reconcile.Result{}, client.IgnoreNotFound(t.c.Delete(ctx, s, client.Preconditions{UID: &s.UID}))
}

// csrController is kube-controller-manager's CSR approver and kubelet
// client signer.
type csrController struct {
	c  client.Client
	ca *apiserver.CA
}

func (r *csrController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.c.Get(ctx, req.NamespacedName, csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || len(csr.Status.Certificate) > 0 {
		return reconcile.Result{}, nil
	}
	x509cr, err := parseCSR(csr.Spec.Request)
	if err != nil {
		// Neither the approver nor the signer acts on a request that does
		// not parse.
		ctrl.LoggerFrom(ctx).Info("CSR does not parse", "csr", csr.Name, "reason", err.Error())
		return reconcile.Result{}, nil
	}
	if err := kubeletClientCSR(x509cr, csr.Spec.Usages); err != nil {
		ctrl.LoggerFrom(ctx).Info("CSR is not a kubelet client CSR", "csr", csr.Name, "reason", err.Error())
		return reconcile.Result{}, nil
	}
	switch {
	case condition(csr, certificatesv1.CertificateDenied) || condition(csr, certificatesv1.CertificateFailed):
		return reconcile.Result{}, nil
	case !condition(csr, certificatesv1.CertificateApproved):
		return reconcile.Result{}, r.approve(ctx, csr, x509cr)
	}
	return reconcile.Result{}, r.sign(ctx, csr, x509cr)
}

// approve is the approver's: the requester must be allowed to create
// certificatesigningrequests/selfnodeclient when it asks for its own
// name's certificate, or certificatesigningrequests/nodeclient.
func (r *csrController) approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, x509cr *x509.CertificateRequest) error {
	subresources := []string{"nodeclient"}
	if csr.Spec.Username == x509cr.Subject.CommonName {
		subresources = []string{"selfnodeclient", "nodeclient"}
	}
	for _, sub := range subresources {
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range csr.Spec.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: sub, Verb: "create",
			},
		}}
		if err := r.c.Create(ctx, sar); err != nil {
			return fmt.Errorf("reviewing CSR %s: %w", csr.Name, err)
		}
		if !sar.Status.Allowed {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved",
			Message: "Auto approving kubelet client certificate after SubjectAccessReview.", LastUpdateTime: metav1.Now(),
		})
		return r.c.SubResource("approval").Update(ctx, csr)
	}
	ctrl.LoggerFrom(ctx).Info("Not approving CSR: its requester may not create node client certificates", "csr", csr.Name, "user", csr.Spec.Username)
	return nil
}

// sign is the kubelet client signer's: the CSR's subject, client auth,
// for the CSR's expirationSeconds (at least 10 minutes) or SigningDuration.
func (r *csrController) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, x509cr *x509.CertificateRequest) error {
	validity := SigningDuration
	if s := csr.Spec.ExpirationSeconds; s != nil {
		validity = min(validity, max(time.Duration(*s)*time.Second, 10*time.Minute))
	}
	cert, err := r.ca.Issue(x509cr.PublicKey, x509cr.Subject, validity)
	if err != nil {
		return err
	}
	csr.Status.Certificate = cert
	if err := r.c.Status().Update(ctx, csr); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("writing the certificate of CSR %s: %w", csr.Name, err)
	}
	return nil
}

func condition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == t && c.Status == corev1.ConditionTrue
	})
}

func parseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("no PEM CERTIFICATE REQUEST")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	return cr, cr.CheckSignature()
}

// kubeletClientCSR is the check both the approver and the signer make of a
// kubelet client CSR (k8s.io/kubernetes pkg/apis/certificates
// ValidateKubeletClientCSR): organization system:nodes only, a common name
// system:node:<name>, no subject alternative names, and client auth with
// at most digital signature and key encipherment besides.
func kubeletClientCSR(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return fmt.Errorf("organization %v is not [system:nodes]", req.Subject.Organization)
	}
	if len(req.DNSNames) > 0 || len(req.EmailAddresses) > 0 || len(req.IPAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("subject alternative names are not allowed")
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") || req.Subject.CommonName == "system:node:" {
		return fmt.Errorf("common name %q lacks the prefix system:node: of a node", req.Subject.CommonName)
	}
	if !slices.Contains(usages, certificatesv1.UsageClientAuth) {
		return errors.New("usages do not include client auth")
	}
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		default:
			return fmt.Errorf("usage %q is not allowed", u)
		}
	}
	return nil
}
