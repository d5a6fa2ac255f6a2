// Package apiserver runs a real kube-apiserver and etcd with capwin's and
// Cluster API's CRDs installed, and controller-runtime managers against
// it, knowing the types of the scheme its caller gives. Package envtest is
// this with capwin's whole scheme; the bootstrap provider's tests use this
// package with a scheme of their own, so that they import nothing of the
// infrastructure provider.
package apiserver
