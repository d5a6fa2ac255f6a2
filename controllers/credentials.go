package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform/vsphere"
)

// errCredentials and errNotAllowed are why credentials could not be had.
var (
	errCredentials = errors.New("credentials not found")
	errNotAllowed  = errors.New("identity does not allow the namespace")
)

// vsphereCredentials resolves a vSphere HybridCluster's identityRef: a Secret
// in the cluster's namespace, or a HybridClusterIdentity (whose Secret is in
// the controller's namespace) that allows the cluster's namespace.
func vsphereCredentials(ctx context.Context, c client.Client, controllerNamespace string, hc *infrav1.HybridCluster) (vsphere.Credentials, error) {
	v := hc.Spec.VSphere
	secretKey := client.ObjectKey{Namespace: hc.Namespace, Name: v.IdentityRef.Name}
	if v.IdentityRef.Kind == infrav1.ClusterIdentity {
		identity := &infrav1.HybridClusterIdentity{}
		if err := c.Get(ctx, client.ObjectKey{Name: v.IdentityRef.Name}, identity); err != nil {
			if apierrors.IsNotFound(err) {
				return vsphere.Credentials{}, fmt.Errorf("%w: HybridClusterIdentity %s does not exist", errCredentials, v.IdentityRef.Name)
			}
			return vsphere.Credentials{}, err
		}
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: hc.Namespace}, ns); err != nil {
			return vsphere.Credentials{}, err
		}
		allowed, err := identity.Spec.AllowedNamespaces.Allows(ns)
		if err != nil {
			return vsphere.Credentials{}, err
		}
		if !allowed {
			return vsphere.Credentials{}, fmt.Errorf("%w: HybridClusterIdentity %s does not allow namespace %s (spec.allowedNamespaces)", errNotAllowed, identity.Name, hc.Namespace)
		}
		secretKey = client.ObjectKey{Namespace: controllerNamespace, Name: identity.Spec.SecretName}
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, secretKey, s); err != nil {
		if apierrors.IsNotFound(err) {
			return vsphere.Credentials{}, fmt.Errorf("%w: Secret %s does not exist", errCredentials, secretKey)
		}
		return vsphere.Credentials{}, err
	}
	user, pass := string(s.Data["username"]), string(s.Data["password"])
	if user == "" || pass == "" {
		return vsphere.Credentials{}, fmt.Errorf("%w: Secret %s must have the keys username and password", errCredentials, secretKey)
	}
	return vsphere.Credentials{
		Server:     v.Server,
		Username:   user,
		Password:   pass,
		Thumbprint: v.Thumbprint,
		Insecure:   v.Insecure != nil && *v.Insecure,
	}, nil
}
