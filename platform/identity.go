package platform

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// IdentityAllows reads the HybridClusterIdentity name and reports whether it
// allows namespace. Its error is the API server's, so that a caller can tell
// a missing identity (apierrors.IsNotFound) from one it could not read. The
// webhook and CredentialsSecret both decide with it.
func IdentityAllows(ctx context.Context, c client.Reader, name, namespace string) (*infrav1.HybridClusterIdentity, bool, error) {
	identity := &infrav1.HybridClusterIdentity{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, identity); err != nil {
		return nil, false, err
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			// Not the identity's NotFound, which callers look for.
			return nil, false, fmt.Errorf("namespace %q does not exist", namespace)
		}
		return nil, false, fmt.Errorf("reading namespace %q: %w", namespace, err)
	}
	allowed, err := identity.Spec.AllowedNamespaces.Allows(ns)
	return identity, allowed, err
}

// CredentialsSecret resolves a HybridCluster's identityRef to its Secret: a
// Secret in the cluster's namespace, or the Secret (in the controller's
// namespace) of a HybridClusterIdentity that allows the cluster's namespace.
func CredentialsSecret(ctx context.Context, c client.Reader, controllerNamespace string, hc *infrav1.HybridCluster) (*corev1.Secret, error) {
	ref := hc.Spec.Identity()
	key := client.ObjectKey{Namespace: hc.Namespace, Name: ref.Name}
	if ref.Kind == infrav1.ClusterIdentity {
		identity, allowed, err := IdentityAllows(ctx, c, ref.Name, hc.Namespace)
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("%w: HybridClusterIdentity %s does not exist", ErrCredentialsNotFound, ref.Name)
		case err != nil:
			return nil, err
		case !allowed:
			return nil, fmt.Errorf("%w: HybridClusterIdentity %s does not allow namespace %s (spec.allowedNamespaces)", ErrIdentityNotAllowed, ref.Name, hc.Namespace)
		}
		key = client.ObjectKey{Namespace: controllerNamespace, Name: identity.Spec.SecretName}
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s does not exist", ErrCredentialsNotFound, key)
		}
		return nil, err
	}
	return s, nil
}

// SecretValues returns the Secret's values of keys, or ErrCredentialsNotFound
// naming the keys when one is missing or empty.
func SecretValues(s *corev1.Secret, keys ...string) ([]string, error) {
	values := make([]string, len(keys))
	for i, k := range keys {
		values[i] = string(s.Data[k])
		if values[i] == "" {
			return nil, fmt.Errorf("%w: Secret %s/%s must have the keys %s", ErrCredentialsNotFound, s.Namespace, s.Name, strings.Join(keys, " and "))
		}
	}
	return values, nil
}
