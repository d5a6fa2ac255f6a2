// Package v1alpha1 holds the bootstrap-capwin API: WindowsKubeadmConfig and
// its template, the kubeadm join request and node settings of a Windows
// Server worker.
// +kubebuilder:object:generate=true
// +groupName=bootstrap.cluster.x-k8s.io
package v1alpha1
