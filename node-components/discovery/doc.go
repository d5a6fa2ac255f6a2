// Package discovery is the node agent's kubeadm token discovery: it proves
// it talks to the cluster the node configuration names, by the bootstrap
// token's signature on kube-public/cluster-info and the pinned CA hashes,
// and then reads the cluster's kubelet configuration with the token. It
// also waits for the kubelet's Node to appear once the kubelet has joined.
package discovery
