package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// HybridClusterTemplateResource is the HybridCluster a ClusterClass stamps out.
type HybridClusterTemplateResource struct {
	// metadata is applied to the HybridCluster made from this template.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the HybridCluster's spec.
	// +required
	Spec HybridClusterSpec `json:"spec,omitempty,omitzero"`
}

// HybridClusterTemplateSpec is the spec of a HybridClusterTemplate.
type HybridClusterTemplateSpec struct {
	// template is the HybridCluster to create.
	// +required
	Template HybridClusterTemplateResource `json:"template,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=hybridclustertemplates,scope=Namespaced,categories=cluster-api,shortName=hct
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// HybridClusterTemplate is the HybridCluster of a ClusterClass.
type HybridClusterTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +required
	Spec HybridClusterTemplateSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// HybridClusterTemplateList is a list of HybridClusterTemplate.
type HybridClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HybridClusterTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &HybridClusterTemplate{}, &HybridClusterTemplateList{})
}
