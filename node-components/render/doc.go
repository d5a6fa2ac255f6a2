// Package render turns a node configuration into what a Windows node runs
// on: containerd's config.toml and registry hosts files, the CNI and flannel
// configuration, the kubelet's configuration and bootstrap kubeconfig, and
// the Windows services with their command lines. Every function is pure and
// its output deterministic, so golden files pin each artefact. The service
// renderers name the node after the configuration's nodeName, which the
// agent has filled in (with the computer name when the configuration had
// none) before it renders anything.
package render
