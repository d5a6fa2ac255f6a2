package v1alpha1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// IdentityKind is the kind of object an identityRef names.
// +kubebuilder:validation:Enum=Secret;HybridClusterIdentity
type IdentityKind string

const (
	// SecretIdentity is a Secret in the HybridCluster's own namespace.
	SecretIdentity IdentityKind = "Secret"
	// ClusterIdentity is a cluster-scoped HybridClusterIdentity.
	ClusterIdentity IdentityKind = "HybridClusterIdentity"
)

// IdentityReference names the credentials a HybridCluster uses.
type IdentityReference struct {
	// kind is Secret (in the HybridCluster's namespace) or HybridClusterIdentity.
	// +required
	Kind IdentityKind `json:"kind,omitempty"`

	// name of the Secret or HybridClusterIdentity.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// AllowedNamespaces says which namespaces may use a HybridClusterIdentity.
// Leaving it out allows none.
// +kubebuilder:validation:MinProperties=1
type AllowedNamespaces struct {
	// list names the namespaces allowed.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	NamespaceList []string `json:"list,omitempty"`

	// selector selects the namespaces allowed by their labels; an empty
	// selector selects every namespace.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// HybridClusterIdentitySpec is a credential shared by clusters in several namespaces.
type HybridClusterIdentitySpec struct {
	// secretName is the Secret, in the namespace the capwin controller runs
	// in, that holds the credentials (vSphere: username, password; Azure:
	// tenantID, clientID, clientSecret).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`

	// allowedNamespaces are the namespaces whose HybridClusters may use this
	// identity. No namespace may when it is left out.
	// +optional
	AllowedNamespaces *AllowedNamespaces `json:"allowedNamespaces,omitempty"`
}

// HybridClusterIdentityStatus is the observed state of a HybridClusterIdentity.
// +kubebuilder:validation:MinProperties=1
type HybridClusterIdentityStatus struct {
	// conditions say whether the identity's Secret is usable.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=hybridclusteridentities,scope=Cluster,categories=cluster-api,shortName=hci
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1";"clusterctl.cluster.x-k8s.io/move-hierarchy=true"
// +kubebuilder:printcolumn:name="Secret",type="string",JSONPath=".spec.secretName"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// HybridClusterIdentity is a credential that HybridClusters in the namespaces
// it allows may use, so that tenants never see the Secret itself.
type HybridClusterIdentity struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the identity's Secret and the namespaces allowed to use it.
	// +required
	Spec HybridClusterIdentitySpec `json:"spec,omitempty,omitzero"`

	// status is the observed state of the identity.
	// +optional
	Status HybridClusterIdentityStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// HybridClusterIdentityList is a list of HybridClusterIdentity.
type HybridClusterIdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HybridClusterIdentity `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &HybridClusterIdentity{}, &HybridClusterIdentityList{})
}

// Allows reports whether ns may use the identity: listed by name, or matched
// by the selector. A nil AllowedNamespaces allows no namespace.
func (a *AllowedNamespaces) Allows(ns *corev1.Namespace) (bool, error) {
	if a == nil {
		return false, nil
	}
	for _, n := range a.NamespaceList {
		if n == ns.Name {
			return true, nil
		}
	}
	if a.Selector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(a.Selector)
	if err != nil {
		return false, fmt.Errorf("parsing allowedNamespaces.selector: %w", err)
	}
	return sel.Matches(labels.Set(ns.Labels)), nil
}
