package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cloudproviderapi "k8s.io/cloud-provider/api"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/noderules"
)

// A node's labels, taints and kubelet flags are checked by the kubelet when
// it starts and by the API server when it registers the Node, both on the
// VM, long after admission: a refusal there is a node that never joins.
// These rules refuse the same things here.

func validateNodeRegistration(n *bootstrapv1.NodeRegistration, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(n.Labels, path.Child("labels"))
	errs = append(errs, validateNodeLabels(n.Labels, path.Child("labels"))...)
	errs = append(errs, validateTaints(n.Taints, n.KubeletExtraArgs, path)...)
	errs = append(errs, validateExtraArgs(n.KubeletExtraArgs, kubeletFlags, path.Child("kubeletExtraArgs"))...)
	return errs
}

// hostLabels are the labels the kubelet sets from the host it runs on, with
// the one value a capwin node has ("" when it is the host's to say). The
// kubelet lets --node-labels replace its own values
// (pkg/kubelet/kubelet_node_status.go, initialNode), so a Windows node
// labelled kubernetes.io/os=linux would draw Linux pods, and one with
// another windows-build would draw containers of another build, which do
// not start on it.
var hostLabels = map[string]string{
	corev1.LabelOSStable:     "windows",
	kubeletapis.LabelOS:      "windows",
	corev1.LabelArchStable:   "amd64",
	kubeletapis.LabelArch:    "amd64",
	corev1.LabelHostname:     "",
	corev1.LabelWindowsBuild: "",
}

// validateNodeLabels applies the kubelet's rule for --node-labels
// (cmd/kubelet/app/options/options.go, ValidateKubeletFlags): a label in
// the kubernetes.io or k8s.io namespaces must be one the kubelet may set on
// its own Node (k8s.io/kubelet/pkg/apis, IsKubeletLabel), or the kubelet
// exits. The NodeRestriction admission plugin refuses the same labels from
// a node (plugin/pkg/admission/noderestriction, getForbiddenLabels), and
// node-restriction.kubernetes.io ones too.
func validateNodeLabels(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p, v := path.Key(k), labels[k]
		if want, ok := hostLabels[k]; ok {
			switch {
			case want == "":
				errs = append(errs, field.Forbidden(p, fmt.Sprintf(
					"the kubelet sets %s from the host, and a label here would replace the host's value", k)))
			case v != want:
				errs = append(errs, field.Invalid(p, v, fmt.Sprintf(
					"a capwin Windows node's %s is %s: the kubelet sets it, and a label here would replace it and draw pods that cannot run on the node", k, want)))
			}
			continue
		}
		namespace := ""
		if ns, _, ok := strings.Cut(k, "/"); ok {
			namespace = ns
		}
		switch {
		case namespace == clusterv1.NodeRoleLabelPrefix:
			errs = append(errs, field.Forbidden(p,
				"the kubelet refuses node-role.kubernetes.io/ labels in --node-labels and exits (NodeRestriction would refuse them from a node too): "+
					"label the Machine instead (the MachineDeployment's spec.template.metadata.labels), which Cluster API copies to the Node"))
		case inDomain(namespace, clusterv1.NodeRestrictionLabelDomain):
			errs = append(errs, field.Forbidden(p,
				"node-restriction.kubernetes.io/ labels are the ones a node cannot set itself: the NodeRestriction admission plugin refuses them from a node, and the kubelet refuses them in --node-labels and exits; "+
					"label the Machine instead (the MachineDeployment's spec.template.metadata.labels), which Cluster API copies to the Node"))
		case (inDomain(namespace, "kubernetes.io") || inDomain(namespace, "k8s.io")) && !kubeletapis.IsKubeletLabel(k):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf(
				"the kubelet refuses labels in the kubernetes.io and k8s.io namespaces in --node-labels and exits (NodeRestriction would refuse them from a node too), "+
					"except under %s and the keys %s; use a prefix of your own",
				strings.Join(kubeletapis.KubeletLabelNamespaces(), " or "), strings.Join(kubeletapis.KubeletLabels(), ", "))))
		}
	}
	return errs
}

// inDomain reports whether namespace is domain or one of its subdomains.
func inDomain(namespace, domain string) bool {
	return namespace == domain || strings.HasSuffix(namespace, "."+domain)
}

// validateTaints checks each taint as the API server checks a Node's
// (pkg/apis/core/validation, validateNodeTaints): the kubelet registers its
// Node with them, and a Node the API server refuses is a node that never
// joins.
func validateTaints(taints []corev1.Taint, kubeletArgs []bootstrapv1.Arg, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	external := externalCloudProvider(kubeletArgs)
	seen := map[string]int{}
	for i, t := range taints {
		p := path.Child("taints").Index(i)
		for _, msg := range utilvalidation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if t.Value != "" {
			for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect,
				[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
		id := t.Key + ":" + string(t.Effect)
		if j, ok := seen[id]; ok {
			e := field.Duplicate(p, id)
			e.Detail = fmt.Sprintf("taints[%d] has the same key and effect: the API server refuses a Node whose taints are not unique by key and effect, so the kubelet could not register it", j)
			errs = append(errs, e)
			continue
		}
		seen[id] = i
		if external >= 0 && t.Key == cloudproviderapi.TaintExternalCloudProvider && t.Effect == corev1.TaintEffectNoSchedule {
			e := field.Duplicate(p, id)
			e.Detail = fmt.Sprintf("with --cloud-provider=external (kubeletExtraArgs[%d]) the kubelet adds this taint itself, and the API server refuses a Node with two taints of one key and effect; remove it here", external)
			errs = append(errs, e)
		}
	}
	return errs
}

// externalCloudProvider returns the index of the kubelet flag that sets
// --cloud-provider=external, or -1. The last occurrence of a flag wins.
func externalCloudProvider(args []bootstrapv1.Arg) int {
	at := -1
	for i, a := range args {
		if normalizeFlag(a.Name) == "cloud-provider" {
			at = -1
			// cloudprovider.IsExternal's test (k8s.io/cloud-provider).
			if a.Value != nil && *a.Value == "external" {
				at = i
			}
		}
	}
	return at
}

// normalizeFlag is an ExtraArgs name as the components' flag parsing sees
// it: without its dashes, '_' read as '-' (component-base's
// WordSepNormalizeFunc).
func normalizeFlag(name string) string {
	return strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")
}

// component holds the flag rules of one program.
type component struct {
	name string
	// elsewhere are flags that have a field of their own, or that Windows
	// does not implement, and why.
	elsewhere map[string]string
	// removed are flags the program no longer has: it exits with "unknown
	// flag".
	removed map[string]string
	// problem says why a flag cannot be rendered (the agent's rule,
	// node-components/noderules: its form, or a flag capwin-node sets
	// itself), or "".
	problem func(name string) string
}

// dockershimRemoved is why the flags that went with dockershim fail.
const dockershimRemoved = "removed from the kubelet with dockershim in Kubernetes 1.24, so the kubelet exits with \"unknown flag\"; capwin configures containerd and the CNI itself (spec.containerd, spec.network)"

var kubeletFlags = component{
	name: "kubelet",
	elsewhere: map[string]string{
		"system-reserved":            "set spec.kubelet.systemReserved instead",
		"kube-reserved":              "set spec.kubelet.kubeReserved instead",
		"node-labels":                "set spec.nodeRegistration.labels instead",
		"register-with-taints":       "set spec.nodeRegistration.taints instead",
		"container-runtime-endpoint": "capwin sets it to containerd's named pipe",
		"register-node":              "capwin-node waits for the Node the kubelet registers; without it the join never ends",
		"enforce-node-allocatable":   "Windows does not implement it: reservations only lower the allocatable capacity",
		"cgroups-per-qos":            "Windows has no cgroups",
		"cgroup-driver":              "Windows has no cgroups",
		"kube-reserved-cgroup":       "Windows has no cgroups",
		"system-reserved-cgroup":     "Windows has no cgroups",
	},
	removed: map[string]string{
		"network-plugin":                         dockershimRemoved,
		"network-plugin-mtu":                     dockershimRemoved,
		"cni-bin-dir":                            dockershimRemoved,
		"cni-conf-dir":                           dockershimRemoved,
		"cni-cache-dir":                          dockershimRemoved,
		"docker-endpoint":                        dockershimRemoved,
		"image-pull-progress-deadline":           dockershimRemoved,
		"experimental-dockershim-root-directory": dockershimRemoved,
		"container-runtime":                      "removed from the kubelet in Kubernetes 1.27, so the kubelet exits with \"unknown flag\"; the runtime is containerd, whose endpoint capwin sets",
		"pod-infra-container-image":              "removed from the kubelet in Kubernetes 1.35 (it did nothing since 1.27), so the kubelet exits with \"unknown flag\"; set spec.containerd.pauseImage instead",
	},
	problem: noderules.KubeletArgProblem,
}

var kubeProxyFlags = component{
	name:    "kube-proxy",
	problem: noderules.KubeProxyArgProblem,
}

// validateExtraArgs checks the extra flags of one component. Flag names are
// case-sensitive, so one in another case is unknown to the program; and two
// entries naming one flag (--max-pods and max_pods) are refused, as
// Cluster API refuses a name twice in its kubeletExtraArgs: a flag that
// takes one value keeps only the last.
func validateExtraArgs(args []bootstrapv1.Arg, c component, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, a := range args {
		p := path.Index(i).Child("name")
		name := normalizeFlag(a.Name)
		lower := strings.ToLower(name)
		if why, ok := c.elsewhere[lower]; ok {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s flag --%s: %s", c.name, lower, why)))
			continue
		}
		if why := c.problem(strings.TrimLeft(a.Name, "-")); why != "" {
			errs = append(errs, field.Forbidden(p, c.name+" flag: "+why))
			continue
		}
		if name != lower {
			errs = append(errs, field.Invalid(p, a.Name, fmt.Sprintf(
				"%s flags are lower case and their parsing is case-sensitive: %s would exit with \"unknown flag: --%s\"", c.name, c.name, strings.TrimLeft(a.Name, "-"))))
			continue
		}
		if why, ok := c.removed[name]; ok {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s flag --%s was %s", c.name, name, why)))
			continue
		}
		if j, ok := seen[name]; ok {
			e := field.Duplicate(p, a.Name)
			e.Detail = fmt.Sprintf("names the flag --%s as %s[%d] does: give it once (%s keeps only the last value of a flag that takes one)", name, path.String(), j, c.name)
			errs = append(errs, e)
			continue
		}
		seen[name] = i
	}
	return errs
}
