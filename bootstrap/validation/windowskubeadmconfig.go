package validation

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/internal/validate"
)

// MinReservedMemory is the least memory a Windows node sets aside for the
// system and the kubelet together: Windows has no OOM killer, so a node that
// lets pods use all its memory pages until it stops responding.
var MinReservedMemory = resource.MustParse("2Gi")

// ValidateConfig checks a WindowsKubeadmConfig: its spec, that it does not
// bootstrap a control-plane Machine, and, when cluster is not nil, its spec
// against the Cluster it joins.
func ValidateConfig(c *bootstrapv1.WindowsKubeadmConfig, cluster *clusterv1.Cluster) field.ErrorList {
	spec := field.NewPath("spec")
	errs := ValidateConfigSpec(&c.Spec, spec)
	if _, cp := c.Labels[clusterv1.MachineControlPlaneLabel]; cp {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels").Key(clusterv1.MachineControlPlaneLabel),
			"the control plane is Linux only: a WindowsKubeadmConfig cannot bootstrap a control-plane Machine; use a KubeadmControlPlane with Linux machines"))
	}
	if cluster != nil {
		errs = append(errs, ValidateConfigForCluster(&c.Spec, cluster, spec)...)
	}
	return errs
}

// RatchetUpdate takes the errors of a changed config or template whose
// spec, at path, was oldSpec, and drops the refusals of what the object
// already had when admission accepted it: Hyper-V isolation, accepted
// before it was refused. Such an object keeps getting its finalizers, owner
// references and labels, and can be deleted; a new one is refused.
func RatchetUpdate(errs field.ErrorList, oldSpec *bootstrapv1.WindowsKubeadmConfigSpec, path *field.Path) field.ErrorList {
	if oldSpec.Containerd.Isolation != bootstrapv1.HyperVIsolation {
		return errs
	}
	isolation := path.Child("containerd", "isolation").String()
	var kept field.ErrorList
	for _, e := range errs {
		if e.Field == isolation && e.Type == field.ErrorTypeForbidden {
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// ValidateConfigTemplate checks a WindowsKubeadmConfigTemplate: the metadata
// it gives its configs and their spec.
func ValidateConfigTemplate(t *bootstrapv1.WindowsKubeadmConfigTemplate) field.ErrorList {
	tmpl := field.NewPath("spec", "template")
	errs := t.Spec.Template.ObjectMeta.Validate(tmpl.Child("metadata"))
	return append(errs, ValidateConfigSpec(&t.Spec.Template.Spec, tmpl.Child("spec"))...)
}

var reservableResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "pid"}

// ValidateConfigSpec checks a WindowsKubeadmConfig spec on its own (what it
// can know without the Cluster). Shared by the webhooks and `capwin render`.
func ValidateConfigSpec(s *bootstrapv1.WindowsKubeadmConfigSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateNodeRegistration(&s.NodeRegistration, path.Child("nodeRegistration"))...)
	errs = append(errs, validateKubelet(&s.Kubelet, path.Child("kubelet"))...)
	errs = append(errs, validateContainerd(&s.Containerd, path.Child("containerd"))...)
	errs = append(errs, validateNetwork(&s.Network, path.Child("network"))...)
	errs = append(errs, validateKubeProxy(&s.KubeProxy, path.Child("kubeProxy"))...)
	errs = append(errs, validateProxy(&s.Proxy, path.Child("proxy"))...)
	errs = append(errs, validateFiles(s.Files, path.Child("files"))...)
	if ptr.Deref(s.GMSA.Enabled, false) {
		errs = append(errs, field.Forbidden(path.Child("gmsa", "enabled"), "gMSA is not implemented yet: capwin installs no credential-spec webhook and configures no node for it; leave it unset"))
	}
	if len(errs) == 0 {
		errs = append(errs, validatePayloadSize(s, path)...)
	}
	return errs
}

// validatePayloadSize renders the config with stand-ins of the same length
// for what only the cluster knows (token, CA hash) and refuses a
// payload over the platforms' user-data limit, before any VM is made. Files
// read from Secrets count as empty here; the reconciler checks again with
// them.
func validatePayloadSize(s *bootstrapv1.WindowsKubeadmConfigSpec, path *field.Path) field.ErrorList {
	p, err := payload.Render(payload.Input{
		Spec:              s,
		KubernetesVersion: "v1.36.3",
		ControlPlaneHost:  "control-plane.cluster.example",
		ControlPlanePort:  6443,
		Token:             "000000.0000000000000000",
		CACertHashes:      []string{"sha256:" + strings.Repeat("0", 64)},
		PodCIDRs:          []string{"10.244.0.0/16"},
		ServiceCIDRs:      []string{"10.96.0.0/12"},
		FileContent:       func(bootstrapv1.SecretKeyReference) ([]byte, error) { return nil, nil },
	})
	if err != nil {
		// What is wrong is reported by the other rules or by the reconciler.
		return nil
	}
	if p.CheckSize() != nil {
		return field.ErrorList{field.Invalid(path.Child("files"), fmt.Sprintf("%d bytes", len(p.Script)), fmt.Sprintf(
			"the bootstrap payload would be about %d bytes, over the %d byte user-data limit of Azure and vSphere: shrink the files and commands, or fetch large files at boot",
			len(p.Script), payload.MaxSize))}
	}
	return nil
}

func validateKubelet(k *bootstrapv1.KubeletSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	total := resource.Quantity{}
	for _, r := range []struct {
		name string
		list corev1.ResourceList
	}{{"systemReserved", k.SystemReserved}, {"kubeReserved", k.KubeReserved}} {
		for name, q := range r.list {
			p := path.Child(r.name).Key(string(name))
			if !isOneOf(name, reservableResources) {
				errs = append(errs, field.NotSupported(p, name, reservableResources))
				continue
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p, q.String(), "must not be negative"))
			}
		}
		if m, ok := r.list[corev1.ResourceMemory]; ok {
			total.Add(m)
		}
	}
	if total.Cmp(MinReservedMemory) < 0 {
		errs = append(errs, field.Invalid(path, total.String(), fmt.Sprintf(
			"systemReserved.memory plus kubeReserved.memory must be at least %s: Windows has no OOM killer, and a node without reserved memory stops responding when pods use it all",
			MinReservedMemory.String())))
	}
	return errs
}

func isOneOf(name corev1.ResourceName, names []corev1.ResourceName) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// hyperVNotSupported is why Hyper-V isolation is refused. A bootstrap
// config cannot see the platform of the machine it bootstraps (the two
// providers meet only through the Cluster API contract), so it is refused
// on every platform until one can run it.
const hyperVNotSupported = "Hyper-V isolation is not supported on vSphere until capwin builds it end to end " +
	"(capwin does not give its VMs nested virtualization, and no RuntimeClass names containerd's Hyper-V handler), " +
	"nor on Azure, which capwin does not implement yet; remove the field or set Process"

func validateContainerd(c *bootstrapv1.ContainerdSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r := strings.ToLower(c.Runtime); {
	case c.Runtime == "" || c.Runtime == bootstrapv1.ContainerdRuntime:
	case strings.Contains(r, "docker"):
		errs = append(errs, field.Invalid(path.Child("runtime"), c.Runtime,
			"Docker is not a supported runtime: dockershim was removed in Kubernetes 1.24 and Windows nodes run containerd; remove the field or set it to containerd"))
	default:
		errs = append(errs, field.NotSupported(path.Child("runtime"), c.Runtime, []string{bootstrapv1.ContainerdRuntime}))
	}
	switch c.Isolation {
	case "", bootstrapv1.ProcessIsolation:
	case bootstrapv1.HyperVIsolation:
		errs = append(errs, field.Forbidden(path.Child("isolation"), hyperVNotSupported))
	default:
		errs = append(errs, field.NotSupported(path.Child("isolation"), c.Isolation, []bootstrapv1.Isolation{bootstrapv1.ProcessIsolation}))
	}
	for i, m := range c.RegistryMirrors {
		p := path.Child("registryMirrors").Index(i)
		if err := validate.Host(m.Registry, p.Child("registry")); err != nil && !strings.Contains(m.Registry, ":") {
			errs = append(errs, err)
		}
		for j, e := range m.Endpoints {
			if err := validateURL(e, p.Child("endpoints").Index(j), "https", "http"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func validateNetwork(n *bootstrapv1.NetworkSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch n.CNI {
	case "", bootstrapv1.Flannel, bootstrapv1.Calico:
	default:
		errs = append(errs, field.NotSupported(path.Child("cni"), n.CNI, []bootstrapv1.CNI{bootstrapv1.Flannel, bootstrapv1.Calico}))
	}
	switch n.Mode {
	case "", bootstrapv1.Overlay:
		if n.VXLAN.VNI != 0 && n.VXLAN.VNI != bootstrapv1.WindowsVXLANVNI {
			errs = append(errs, field.Invalid(path.Child("vxlan", "vni"), n.VXLAN.VNI, fmt.Sprintf(
				"Windows overlay networking accepts only VNI %d; set the Linux side of the CNI to %d too", bootstrapv1.WindowsVXLANVNI, bootstrapv1.WindowsVXLANVNI)))
		}
		if n.VXLAN.Port != 0 && n.VXLAN.Port != bootstrapv1.WindowsVXLANPort {
			errs = append(errs, field.Invalid(path.Child("vxlan", "port"), n.VXLAN.Port, fmt.Sprintf(
				"Windows overlay networking accepts only UDP port %d; set the Linux side of the CNI to %d too", bootstrapv1.WindowsVXLANPort, bootstrapv1.WindowsVXLANPort)))
		}
	case bootstrapv1.L2Bridge:
		if n.VXLAN != (bootstrapv1.VXLANSpec{}) {
			errs = append(errs, field.Forbidden(path.Child("vxlan"), "VXLAN settings apply to overlay mode only"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("mode"), n.Mode, []bootstrapv1.NetworkMode{bootstrapv1.Overlay, bootstrapv1.L2Bridge}))
	}
	overlay := n.Mode == "" || n.Mode == bootstrapv1.Overlay
	check := func(value string, p *field.Path) {
		prefix, err := validate.CIDR(value, p)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if overlay && prefix.Addr().Is6() {
			errs = append(errs, field.Invalid(p, value, "Windows overlay networking is IPv4 only; use l2bridge for IPv6"))
		}
	}
	if n.NodeSubnet != "" {
		check(n.NodeSubnet, path.Child("nodeSubnet"))
	}
	for i, c := range n.OutboundNATExceptions {
		check(c, path.Child("outboundNATExceptions").Index(i))
	}
	return errs
}

func validateKubeProxy(k *bootstrapv1.KubeProxySpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch k.Mode {
	case "", bootstrapv1.KernelspaceProxy:
	case "userspace":
		errs = append(errs, field.Invalid(path.Child("mode"), k.Mode, "the userspace proxy was removed from Kubernetes; Windows uses kernelspace (HNS)"))
	default:
		errs = append(errs, field.NotSupported(path.Child("mode"), k.Mode, []bootstrapv1.KubeProxyMode{bootstrapv1.KernelspaceProxy}))
	}
	errs = append(errs, validateExtraArgs(k.ExtraArgs, kubeProxyFlags, path.Child("extraArgs"))...)
	return errs
}

func validateProxy(p *bootstrapv1.ProxySpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.HTTPProxy != "" {
		if err := validateURL(p.HTTPProxy, path.Child("httpProxy"), "http", "https"); err != nil {
			errs = append(errs, err)
		}
	}
	if p.HTTPSProxy != "" {
		if err := validateURL(p.HTTPSProxy, path.Child("httpsProxy"), "http", "https"); err != nil {
			errs = append(errs, err)
		}
	}
	if len(p.NoProxy) > 0 && p.HTTPProxy == "" && p.HTTPSProxy == "" {
		errs = append(errs, field.Forbidden(path.Child("noProxy"), "noProxy goes with httpProxy or httpsProxy"))
	}
	return errs
}

func validateFiles(files []bootstrapv1.File, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, f := range files {
		p := path.Index(i)
		if err := validateWindowsPath(f.Path, p.Child("path")); err != nil {
			errs = append(errs, err)
		}
		// Windows paths are case-insensitive: C:\a and c:\A are one file.
		key := strings.ToLower(f.Path)
		if seen[key] {
			errs = append(errs, field.Duplicate(p.Child("path"), f.Path))
		}
		seen[key] = true
		switch {
		case f.Content != "" && f.ContentFrom != nil:
			errs = append(errs, field.Forbidden(p.Child("contentFrom"), "set content or contentFrom, not both"))
		case f.ContentFrom != nil:
			if f.ContentFrom.Secret.Name == "" || f.ContentFrom.Secret.Key == "" {
				errs = append(errs, field.Required(p.Child("contentFrom", "secret"), "the Secret's name and key"))
			}
		}
		switch f.Encoding {
		case "", "plain":
		case "base64":
			if _, err := base64.StdEncoding.DecodeString(f.Content); err != nil {
				errs = append(errs, field.Invalid(p.Child("content"), "<content>", "encoding is base64 but the content does not decode: "+err.Error()))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("encoding"), f.Encoding, []string{"plain", "base64"}))
		}
	}
	return errs
}

// ValidateConfigForCluster checks a config against the Cluster it joins:
// overlay networking on Windows is IPv4 only.
func ValidateConfigForCluster(s *bootstrapv1.WindowsKubeadmConfigSpec, cluster *clusterv1.Cluster, path *field.Path) field.ErrorList {
	if s.Network.Mode != "" && s.Network.Mode != bootstrapv1.Overlay {
		return nil
	}
	var errs field.ErrorList
	cn := cluster.Spec.ClusterNetwork
	for _, r := range []struct {
		what   string
		blocks []string
	}{{"pods", cn.Pods.CIDRBlocks}, {"services", cn.Services.CIDRBlocks}} {
		what := r.what
		for _, b := range r.blocks {
			if p, err := netip.ParsePrefix(b); err == nil && p.Addr().Is6() {
				errs = append(errs, field.Invalid(path.Child("network", "mode"), s.Network.Mode, fmt.Sprintf(
					"Cluster %s has the IPv6 %s CIDR %s: Windows overlay networking is IPv4 only, so IPv6 and dual-stack clusters need mode l2bridge",
					cluster.Name, what, b)))
			}
		}
	}
	return errs
}
