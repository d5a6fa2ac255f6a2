// Package reconciler is bootstrap-capwin's WindowsKubeadmConfig reconciler:
// it waits for the control plane, creates and refreshes the node's bootstrap
// token in the workload cluster, and writes the bootstrap data Secret.
package reconciler
