// Package cni holds one driver per pod network (CNI) a Windows node can
// run. A driver owns what its network needs of the node: the bundle's
// files it runs, the HNS networks the agent makes for it before the kubelet
// starts, its configuration files and Windows services, the HNS network
// pods and kube-proxy use, kube-proxy's source VIP on it, and what reset
// removes. The join, install, reset and status ask the driver the node
// configuration names (For) instead of branching on the CNI's name; the
// renderers of node-components/render are the drivers' library.
//
// Adding a CNI is adding a driver here, with its tests, to drivers; and the
// API's value, its validation and the flavors on the management side.
package cni
