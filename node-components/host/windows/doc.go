// Package windows is the real host.Host: it drives the service control
// manager, the Host Networking Service, the registry, the file system and
// PowerShell of the Windows machine capwin-node runs on, and hosts
// kubelet, kube-proxy, flanneld and csi-proxy as Windows services
// (RunService).
package windows
