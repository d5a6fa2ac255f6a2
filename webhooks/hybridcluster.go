package webhooks

import (
	"context"

	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/validate"
	"github.com/capwin/capwin/platform"
)

// HybridCluster validates HybridClusters. It reads HybridClusterIdentities
// and Namespaces to check that an identity admits the cluster's namespace.
// +kubebuilder:object:generate=false
type HybridCluster struct {
	Client client.Reader
}

// SetupWebhookWithManager registers the webhook with mgr's webhook server.
func (w *HybridCluster) SetupWebhookWithManager(mgr ctrl.Manager) error {
	if w.Client == nil {
		w.Client = mgr.GetAPIReader()
	}
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.HybridCluster{}).
		WithValidator(w).
		Complete()
}

var _ admission.Validator[*infrav1.HybridCluster] = &HybridCluster{}

// ValidateCreate checks a new HybridCluster.
func (w *HybridCluster) ValidateCreate(ctx context.Context, c *infrav1.HybridCluster) (admission.Warnings, error) {
	errs := validateClusterSpec(&c.Spec, field.NewPath("spec"))
	warnings, identityErrs := w.validateIdentity(ctx, c)
	return warnings, invalid(c, append(errs, identityErrs...))
}

// ValidateUpdate checks a changed HybridCluster: the platform and where it
// places machines cannot change, and the control-plane endpoint is set once.
func (w *HybridCluster) ValidateUpdate(ctx context.Context, oldC, newC *infrav1.HybridCluster) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	errs := validateClusterSpec(&newC.Spec, spec)
	errs = append(errs, clusterImmutable(&oldC.Spec, &newC.Spec, spec)...)
	// The identity is checked when it is chosen, not on every update: a
	// finalizer or status change must go through, whatever the identity says
	// now (the controller reports that in a condition).
	if newC.DeletionTimestamp.IsZero() && oldC.Spec.Identity() != newC.Spec.Identity() {
		warnings, identityErrs := w.validateIdentity(ctx, newC)
		return warnings, invalid(newC, append(errs, identityErrs...))
	}
	return nil, invalid(newC, errs)
}

// ValidateDelete allows every deletion.
func (w *HybridCluster) ValidateDelete(context.Context, *infrav1.HybridCluster) (admission.Warnings, error) {
	return nil, nil
}

func clusterImmutable(oldS, newS *infrav1.HybridClusterSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if oldS.ControlPlaneEndpoint.IsValid() {
		errs = append(errs, immutable(oldS.ControlPlaneEndpoint, newS.ControlPlaneEndpoint, spec.Child("controlPlaneEndpoint"))...)
	}
	if (oldS.VSphere == nil) != (newS.VSphere == nil) || (oldS.Azure == nil) != (newS.Azure == nil) {
		return append(errs, field.Forbidden(spec, "the platform (spec.vsphere or spec.azure) of a HybridCluster cannot change"))
	}
	if o, n := oldS.VSphere, newS.VSphere; o != nil && n != nil {
		p := spec.Child("vsphere")
		errs = append(errs, immutable(o.Server, n.Server, p.Child("server"))...)
		errs = append(errs, immutable(o.Datacenter, n.Datacenter, p.Child("datacenter"))...)
	}
	if o, n := oldS.Azure, newS.Azure; o != nil && n != nil {
		p := spec.Child("azure")
		errs = append(errs, immutable(o.SubscriptionID, n.SubscriptionID, p.Child("subscriptionID"))...)
		errs = append(errs, immutable(o.Location, n.Location, p.Child("location"))...)
		errs = append(errs, immutable(o.ResourceGroup, n.ResourceGroup, p.Child("resourceGroup"))...)
		errs = append(errs, immutable(o.Network.VNetName, n.Network.VNetName, p.Child("network", "vnetName"))...)
		errs = append(errs, immutable(lbOrDefault(o.APIServerLoadBalancer), lbOrDefault(n.APIServerLoadBalancer), p.Child("apiServerLoadBalancer"))...)
	}
	return errs
}

// lbOrDefault is the load balancer an empty apiServerLoadBalancer means.
func lbOrDefault(lb infrav1.AzureAPIServerLoadBalancer) infrav1.AzureAPIServerLoadBalancer {
	if lb == "" {
		return infrav1.APIServerLoadBalancerPublic
	}
	return lb
}

// validateClusterSpec checks a HybridCluster spec, shared with HybridClusterTemplate.
func validateClusterSpec(s *infrav1.HybridClusterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ep := s.ControlPlaneEndpoint; ep.Host != "" {
		if err := validate.Host(ep.Host, path.Child("controlPlaneEndpoint", "host")); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case s.VSphere == nil && s.Azure == nil:
		errs = append(errs, field.Required(path, "exactly one of spec.vsphere or spec.azure must be set"))
	case s.VSphere != nil && s.Azure != nil:
		errs = append(errs, field.Forbidden(path.Child("azure"), "spec.vsphere is set too: a cluster is on one platform, set exactly one of spec.vsphere or spec.azure"))
	case s.VSphere != nil:
		errs = append(errs, validateVSphereCluster(s.VSphere, path.Child("vsphere"))...)
	default:
		errs = append(errs, validateAzureCluster(s.Azure, path.Child("azure"))...)
	}
	return errs
}

func validateVSphereCluster(v *infrav1.VSphereClusterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v.Server == "" {
		errs = append(errs, field.Required(path.Child("server"), "the vCenter host name or IP address"))
	} else if err := validateHostPort(v.Server, path.Child("server")); err != nil {
		errs = append(errs, err)
	}
	if v.Datacenter == "" {
		errs = append(errs, field.Required(path.Child("datacenter"), "the vSphere datacenter"))
	}
	// With neither thumbprint nor insecure, the certificate is verified
	// against the system's trusted CAs.
	insecure := v.Insecure != nil && *v.Insecure
	switch {
	case v.Thumbprint != "" && insecure:
		errs = append(errs, field.Forbidden(path.Child("insecure"), "a thumbprint is set: a verified connection cannot also be insecure"))
	case v.Thumbprint != "":
		if err := validateThumbprint(v.Thumbprint, path.Child("thumbprint")); err != nil {
			errs = append(errs, err)
		}
	}
	return append(errs, validateIdentityRef(v.IdentityRef, path.Child("identityRef"))...)
}

func validateAzureCluster(a *infrav1.AzureClusterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !guid.MatchString(a.SubscriptionID) {
		errs = append(errs, field.Invalid(path.Child("subscriptionID"), a.SubscriptionID, "must be a subscription GUID such as 00000000-0000-0000-0000-000000000000"))
	}
	if a.Location == "" || strings.ContainsAny(a.Location, " _") || strings.ToLower(a.Location) != a.Location {
		errs = append(errs, field.Invalid(path.Child("location"), a.Location, "must be an Azure region name such as westeurope (lower case, no spaces)"))
	}
	if a.ResourceGroup == "" {
		errs = append(errs, field.Required(path.Child("resourceGroup"), "the resource group of the cluster's resources"))
	}
	net := path.Child("network")
	var blocks []netip.Prefix
	if len(a.Network.CIDRBlocks) == 0 {
		errs = append(errs, field.Required(net.Child("cidrBlocks"), "at least one address space"))
	}
	for i, c := range a.Network.CIDRBlocks {
		p, err := validate.CIDR(c, net.Child("cidrBlocks").Index(i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		blocks = append(blocks, p)
	}
	roles := map[infrav1.AzureSubnetRole]bool{}
	for i, s := range a.Network.Subnets {
		p := net.Child("subnets").Index(i)
		roles[s.Role] = true
		sub, err := validate.CIDR(s.CIDRBlock, p.Child("cidrBlock"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(blocks) > 0 && !containedIn(sub, blocks) {
			errs = append(errs, field.Invalid(p.Child("cidrBlock"), s.CIDRBlock,
				fmt.Sprintf("must lie within the network's cidrBlocks %v", a.Network.CIDRBlocks)))
		}
	}
	for _, r := range []infrav1.AzureSubnetRole{infrav1.SubnetControlPlane, infrav1.SubnetNode} {
		if !roles[r] {
			errs = append(errs, field.Required(net.Child("subnets"), fmt.Sprintf("a subnet with role %s", r)))
		}
	}
	return append(errs, validateIdentityRef(a.IdentityRef, path.Child("identityRef"))...)
}

func containedIn(sub netip.Prefix, blocks []netip.Prefix) bool {
	for _, b := range blocks {
		if b.Bits() <= sub.Bits() && b.Contains(sub.Addr()) {
			return true
		}
	}
	return false
}

func validateIdentityRef(r infrav1.IdentityReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Kind {
	case infrav1.SecretIdentity, infrav1.ClusterIdentity:
	case "":
		errs = append(errs, field.Required(path.Child("kind"), "Secret or HybridClusterIdentity"))
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), r.Kind, []infrav1.IdentityKind{infrav1.SecretIdentity, infrav1.ClusterIdentity}))
	}
	if r.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "the name of the Secret or HybridClusterIdentity"))
	}
	return errs
}

// validateIdentity checks that a HybridClusterIdentity the cluster names
// admits the cluster's namespace. An identity that does not exist yet is
// only a warning: objects are often applied together, and the controller
// reports it in a condition until it appears.
func (w *HybridCluster) validateIdentity(ctx context.Context, c *infrav1.HybridCluster) (admission.Warnings, field.ErrorList) {
	var ref infrav1.IdentityReference
	var path *field.Path
	switch {
	case c.Spec.VSphere != nil:
		ref, path = c.Spec.VSphere.IdentityRef, field.NewPath("spec", "vsphere", "identityRef")
	case c.Spec.Azure != nil:
		ref, path = c.Spec.Azure.IdentityRef, field.NewPath("spec", "azure", "identityRef")
	}
	if ref.Kind != infrav1.ClusterIdentity || ref.Name == "" || w.Client == nil {
		return nil, nil
	}
	_, allowed, err := platform.IdentityAllows(ctx, w.Client, ref.Name, c.Namespace)
	if apierrors.IsNotFound(err) {
		return admission.Warnings{fmt.Sprintf("HybridClusterIdentity %q does not exist yet; the HybridCluster waits for it", ref.Name)}, nil
	}
	if err != nil {
		return nil, field.ErrorList{field.InternalError(path, fmt.Errorf("checking HybridClusterIdentity %q: %w", ref.Name, err))}
	}
	if !allowed {
		return nil, field.ErrorList{field.Forbidden(path.Child("name"), fmt.Sprintf(
			"HybridClusterIdentity %q does not allow namespace %q: add it to the identity's spec.allowedNamespaces (no namespace is allowed when that is empty)",
			ref.Name, c.Namespace))}
	}
	return nil, nil
}
