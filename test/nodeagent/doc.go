// Package nodeagent tests the Windows node agent's parts that talk to a
// cluster (node-components/discovery, the join) against a real
// kube-apiserver set up as kubeadm init leaves a workload cluster.
package nodeagent
