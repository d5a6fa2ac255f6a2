// Package v1alpha1 holds the infrastructure-capwin API: HybridCluster,
// HybridMachine, their templates and HybridClusterIdentity, for Linux and
// Windows Server machines on VMware vSphere and Microsoft Azure.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1alpha1
