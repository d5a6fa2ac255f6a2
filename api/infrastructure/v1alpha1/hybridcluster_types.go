package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ClusterFinalizer lets the HybridCluster reconciler clean up before the
// HybridCluster is removed. Like Cluster API's newer finalizers
// (cluster.x-k8s.io/machineset) it is the API group and the kind, which the
// API server does not warn about.
const ClusterFinalizer = "infrastructure.cluster.x-k8s.io/hybridcluster"

// LegacyClusterFinalizer is ClusterFinalizer's name before it had a path.
// The reconciler replaces it with ClusterFinalizer, and honours it on an
// object being deleted.
//
// Deprecated: use ClusterFinalizer; this name is kept only to migrate
// existing objects.
const LegacyClusterFinalizer = "hybridcluster.infrastructure.cluster.x-k8s.io"

// HybridClusterSpec is the desired state of a HybridCluster. Exactly one of
// vsphere and azure is set.
type HybridClusterSpec struct {
	// controlPlaneEndpoint is the address of the workload cluster's API
	// server: a virtual IP or load balancer in front of the Linux control
	// plane. On Azure with spec.azure.apiServerLoadBalancer Public, capwin
	// sets it to the load balancer it makes; it cannot change once set.
	// +optional
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	// vsphere places the cluster's machines in a vCenter.
	// +optional
	VSphere *VSphereClusterSpec `json:"vsphere,omitempty"`

	// azure places the cluster's machines in an Azure subscription.
	// +optional
	Azure *AzureClusterSpec `json:"azure,omitempty"`
}

// HybridClusterInitializationStatus is the initialization state that the
// Cluster API contract reads.
// +kubebuilder:validation:MinProperties=1
type HybridClusterInitializationStatus struct {
	// provisioned is true once the cluster's infrastructure is ready for machines.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// HybridClusterStatus is the observed state of a HybridCluster.
// +kubebuilder:validation:MinProperties=1
type HybridClusterStatus struct {
	// initialization is what the Cluster API contract reads to learn that the
	// infrastructure is ready.
	// +optional
	Initialization HybridClusterInitializationStatus `json:"initialization,omitempty,omitzero"`

	// failureDomains are the places machines can be spread over: on Azure,
	// the availability zones of spec.azure.zones. None on vSphere yet.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []clusterv1.FailureDomain `json:"failureDomains,omitempty"`

	// operation is the platform operation in flight on one of the
	// cluster's shared resources (Azure: a virtual network's create, a
	// resource group's delete), which the next reconcile looks at again.
	// Empty when none runs.
	// +optional
	Operation ClusterOperation `json:"operation,omitempty,omitzero"`

	// conditions are the HybridCluster's current state: Ready, Paused and
	// the per-platform conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterOperationType is what a cluster's operation does.
// +kubebuilder:validation:Enum=Create;Delete
type ClusterOperationType string

const (
	// ClusterOperationCreate creates or updates a shared resource.
	ClusterOperationCreate ClusterOperationType = "Create"
	// ClusterOperationDelete deletes a shared resource.
	ClusterOperationDelete ClusterOperationType = "Delete"
)

// ClusterOperation is a long-running operation the controller started on
// one of the cluster's shared resources and looks at again on a later
// reconcile, instead of waiting for it.
type ClusterOperation struct {
	// type is what the operation does.
	// +required
	Type ClusterOperationType `json:"type,omitempty"`

	// resource is the resource the operation writes: its type and name as
	// in its Azure resource ID, such as virtualNetworks/capwin-vnet.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Resource string `json:"resource,omitempty"`

	// id is the resume token of the Azure SDK's poller for the operation.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8192
	ID string `json:"id,omitempty"`
}

// IsZero reports whether no operation is recorded.
func (o ClusterOperation) IsZero() bool { return o.ID == "" }

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=hybridclusters,scope=Namespaced,categories=cluster-api,shortName=hc
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster to which this HybridCluster belongs"
// +kubebuilder:printcolumn:name="vCenter",type="string",JSONPath=".spec.vsphere.server",description="vCenter of a vSphere cluster"
// +kubebuilder:printcolumn:name="Location",type="string",JSONPath=".spec.azure.location",description="Region of an Azure cluster"
// +kubebuilder:printcolumn:name="Endpoint",type="string",JSONPath=".spec.controlPlaneEndpoint.host",description="Control plane endpoint"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// HybridCluster is the infrastructure of a Cluster API cluster with a Linux
// control plane and Linux and Windows workers, on vSphere or Azure.
type HybridCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the HybridCluster.
	// +required
	Spec HybridClusterSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state of the HybridCluster.
	// +optional
	Status HybridClusterStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the HybridCluster's conditions.
func (c *HybridCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the HybridCluster's conditions.
func (c *HybridCluster) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// HybridClusterList is a list of HybridCluster.
type HybridClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HybridCluster `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &HybridCluster{}, &HybridClusterList{})
}

// Platform is the PlatformLabel value of the platform the spec is on
// (PlatformVSphere or PlatformAzure), or "" when it names none.
func (s *HybridClusterSpec) Platform() string {
	return platformOf(s.VSphere != nil, s.Azure != nil)
}

// Identity is the identityRef of the spec's platform.
func (s *HybridClusterSpec) Identity() IdentityReference {
	switch {
	case s.VSphere != nil:
		return s.VSphere.IdentityRef
	case s.Azure != nil:
		return s.Azure.IdentityRef
	}
	return IdentityReference{}
}
