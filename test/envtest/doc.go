// Package envtest runs a real kube-apiserver and etcd with capwin's and
// Cluster API's CRDs installed, with capwin's whole scheme (package
// apiserver does the work), and can register the real Cluster API core
// reconcilers and capwin's own in a manager against it.
package envtest
