package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/mod/modfile"
)

// Component is one program of the node bundle: which package of which
// pinned module builds it, and where it goes in the bundle.
type Component struct {
	// Name names the component in the manifest and the SBOM.
	Name string
	// File is its path in the bundle (bundle.Destination says where
	// capwin-node install puts it).
	File string
	// Wrapper is the directory, from the repository's root, of the module
	// whose go.mod pins the upstream module; empty for capwin-node, built
	// from node-components.
	Wrapper string
	// Module is the upstream module the package belongs to.
	Module string
	// Package is the main package to build.
	Package string
	// Kubernetes marks the components built from k8s.io/kubernetes, whose
	// version is make bundle's parameter and is stamped into them.
	Kubernetes bool
	// Small marks a component quick to build (seconds once its
	// dependencies are cached): make test builds these.
	Small bool
}

// Components are the bundle's programs. The versions are those their
// wrapper modules pin (hack/kubernetes and hack/bundle/modules/*), read
// by Pins.
var Components = []Component{
	{Name: "kubelet", File: "bin/kubelet.exe", Wrapper: KubernetesWrapper, Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kubelet", Kubernetes: true},
	{Name: "kube-proxy", File: "bin/kube-proxy.exe", Wrapper: KubernetesWrapper, Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-proxy", Kubernetes: true},
	{Name: "kubeadm", File: "bin/kubeadm.exe", Wrapper: KubernetesWrapper, Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kubeadm", Kubernetes: true},
	{Name: "containerd", File: "bin/containerd.exe", Wrapper: "hack/bundle/modules/containerd", Module: "github.com/containerd/containerd/v2", Package: "github.com/containerd/containerd/v2/cmd/containerd"},
	{Name: "ctr", File: "bin/ctr.exe", Wrapper: "hack/bundle/modules/containerd", Module: "github.com/containerd/containerd/v2", Package: "github.com/containerd/containerd/v2/cmd/ctr"},
	{Name: "containerd-shim-runhcs-v1", File: "bin/containerd-shim-runhcs-v1.exe", Wrapper: "hack/bundle/modules/hcsshim", Module: "github.com/Microsoft/hcsshim", Package: "github.com/Microsoft/hcsshim/cmd/containerd-shim-runhcs-v1"},
	{Name: "flanneld", File: "bin/flanneld.exe", Wrapper: "hack/bundle/modules/flannel", Module: "github.com/flannel-io/flannel", Package: "github.com/flannel-io/flannel"},
	{Name: "csi-proxy", File: "bin/csi-proxy.exe", Wrapper: "hack/bundle/modules/csi-proxy", Module: "github.com/kubernetes-csi/csi-proxy", Package: "github.com/kubernetes-csi/csi-proxy/cmd/csi-proxy"},
	{Name: "win-overlay", File: "cni/win-overlay.exe", Wrapper: "hack/bundle/modules/cni-plugins", Module: "github.com/containernetworking/plugins", Package: "github.com/containernetworking/plugins/plugins/main/windows/win-overlay", Small: true},
	{Name: "win-bridge", File: "cni/win-bridge.exe", Wrapper: "hack/bundle/modules/cni-plugins", Module: "github.com/containernetworking/plugins", Package: "github.com/containernetworking/plugins/plugins/main/windows/win-bridge", Small: true},
	{Name: "host-local", File: "cni/host-local.exe", Wrapper: "hack/bundle/modules/cni-plugins", Module: "github.com/containernetworking/plugins", Package: "github.com/containernetworking/plugins/plugins/ipam/host-local", Small: true},
	// flannel's CNI meta-plugin now lives in github.com/flannel-io/cni-plugin,
	// which the module proxy here does not serve; its Windows code is the
	// one containernetworking/plugins carried until v0.9.1
	// (plugins/meta/flannel), from which that repository was split.
	{Name: "flannel", File: "cni/flannel.exe", Wrapper: "hack/bundle/modules/flannel-cni", Module: "github.com/containernetworking/plugins", Package: "github.com/containernetworking/plugins/plugins/meta/flannel", Small: true},
	{Name: "capwin-node", File: "capwin-node.exe", Module: "github.com/capwin/capwin/node-components", Package: "github.com/capwin/capwin/node-components/cmd/capwin-node", Small: true},
}

// KubernetesWrapper is the module that pins the bundle's k8s.io/kubernetes
// (envtest's kube-apiserver is built from hack/tools/envtest, at the same
// version: hack/envtest-assets.sh checks it).
const KubernetesWrapper = "hack/kubernetes"

// Pin is a component's module version as its wrapper module requires it.
type Pin struct {
	Module, Version string
}

// Pins reads each wrapper module's go.mod under the repository's root and
// returns, per wrapper, the version it requires of its component's module
// (pins[KubernetesWrapper] is the bundle's default Kubernetes version).
func Pins(root string) (map[string]Pin, error) {
	pins := map[string]Pin{}
	for _, c := range Components {
		if c.Wrapper == "" {
			continue
		}
		if p, ok := pins[c.Wrapper]; ok {
			if p.Module != c.Module {
				return nil, fmt.Errorf("wrapper module %s serves both %s and %s", c.Wrapper, p.Module, c.Module)
			}
			continue
		}
		path := filepath.Join(root, c.Wrapper, "go.mod")
		f, err := ReadGoMod(path)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(f.Require, func(r *modfile.Require) bool { return r.Mod.Path == c.Module })
		if i < 0 {
			return nil, fmt.Errorf("%s does not require %s", path, c.Module)
		}
		for _, r := range f.Replace {
			if r.Old.Path == c.Module {
				return nil, fmt.Errorf("%s replaces %s: a pin must be the published module", path, c.Module)
			}
		}
		pins[c.Wrapper] = Pin{Module: c.Module, Version: f.Require[i].Mod.Version}
	}
	return pins, nil
}

// ReadGoMod reads and parses a go.mod file.
func ReadGoMod(path string) (*modfile.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(path, data, nil)
}
