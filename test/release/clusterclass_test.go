package release_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// otherValues are values other than the flavors' defaults for the
// optional variables whose values the checks follow into the objects, a
// second region, and other VM templates (the checks follow the names; the
// Kubernetes version is not varied).
// clusterctl ignores those a flavor does not use.
var otherValues = map[string]string{
	"WINDOWS_RELEASE":                  "ltsc2025",
	"WINDOWS_CNI":                      "calico",
	"WINDOWS_CNI_MODE":                 "l2bridge",
	"VSPHERE_LINUX_TEMPLATE":           "ubuntu-2404-kube-v1.37.0",
	"VSPHERE_WINDOWS_TEMPLATE":         "windows-2025-kube-v1.37.0",
	"AZURE_LOCATION":                   "northeurope",
	"AZURE_VNET_CIDR":                  "10.8.0.0/16",
	"AZURE_CONTROL_PLANE_SUBNET_CIDR":  "10.8.0.0/24",
	"AZURE_NODE_SUBNET_CIDR":           "10.8.16.0/20",
	"AZURE_CONTROL_PLANE_MACHINE_TYPE": "Standard_D4s_v5",
	"AZURE_NODE_MACHINE_TYPE":          "Standard_D8s_v5",
	"AZURE_WINDOWS_MACHINE_TYPE":       "Standard_D16s_v5",
	"AZURE_WINDOWS_IMAGE_NAME":         "capwin-windows-2025",
	"AZURE_WINDOWS_LICENSE_TYPE":       "Windows_Server",
	"AZURE_ENABLE_IP_FORWARDING":       "true",
	"AZURE_CLOUD_ROUTES":               "true",
}

// appliedWith returns what the management cluster holds of cluster, a
// second cluster of the flavor generated into the namespace where applied
// (the first cluster's objects, as the API server answered their apply)
// was applied: for a ClusterClass flavor, cluster's own objects with the
// class and its templates as the API server holds them (clusterctl leaves
// the class out of the second cluster's YAML once it exists, and capwin's
// webhooks have defaulted its templates), for other flavors cluster's
// objects.
func appliedWith(applied, cluster []*unstructured.Unstructured) []*unstructured.Unstructured {
	if classOf(applied) == nil {
		return cluster
	}
	var out []*unstructured.Unstructured
	for _, o := range applied {
		if o.GetKind() == "ClusterClass" || strings.HasSuffix(o.GetKind(), "Template") {
			out = append(out, o)
		}
	}
	for _, o := range cluster {
		if o.GetKind() != "ClusterClass" && !strings.HasSuffix(o.GetKind(), "Template") {
			out = append(out, o)
		}
	}
	return out
}

// checkTopologyAdmitted applies, server-side and dry run, what the
// management cluster is given for the flavor's Cluster in objs (from
// appliedWith). For a ClusterClass flavor that is every template of the
// class as Cluster API's topology controller makes the cluster's own copy:
// the template the API server holds, with the class's patches for the
// Cluster's variables, under a new name. A patch that sets a field next to
// one capwin's webhooks defaulted for the class's values (a Windows build,
// a VXLAN port) is refused there, and the cluster never gets its machines.
// For other flavors it is the flavor's own objects.
func checkTopologyAdmitted(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	cluster := clusterOf(objs)
	g.Expect(cluster).NotTo(BeNil())
	toApply := objs
	if templates := classTemplates(t, objs); templates != nil {
		toApply = nil
		for _, tmpl := range templates {
			o := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": tmpl.GetAPIVersion(), "kind": tmpl.GetKind(), "spec": tmpl.Object["spec"],
			}}
			o.SetNamespace(tmpl.GetNamespace())
			o.SetName(cluster.GetName() + "-" + tmpl.GetName())
			toApply = append(toApply, o)
		}
	}
	for _, o := range toApply {
		o = o.DeepCopy()
		// What the API server set in its answer to an earlier apply.
		for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"} {
			unstructured.RemoveNestedField(o.Object, "metadata", f)
		}
		// Every refusal is reported, not only the first.
		if err := env.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.ForceOwnership, client.FieldOwner("flavor-test")); err != nil {
			t.Errorf("cluster %s: %s %s is refused: %v", cluster.GetName(), o.GetKind(), o.GetName(), err)
		}
	}
}

// checkClusterAPIAdmitsTopology runs Cluster API's own admission of a
// ClusterClass (variable schemas, patch definitions: a replace may not
// name a list element, a template must parse) on the flavor's class, as
// the API server holds it in applied, and of a Cluster with a topology
// (its variables defaulted and checked against the class's schemas) on the
// flavor's Cluster in applied and in each of clusters. The class is created
// in namespace and given the status Cluster API's ClusterClass reconciler
// would give it, which the Cluster's admission reads.
func checkClusterAPIAdmitsTopology(t *testing.T, namespace string, applied []*unstructured.Unstructured, clusters ...[]*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(feature.MutableGates.Set(string(feature.ClusterTopology) + "=true")).To(Succeed())

	class := &clusterv1.ClusterClass{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(classOf(applied).Object, class)).To(Succeed())
	_, err := (&coreadmission.ClusterClass{}).ValidateCreate(ctx, class)
	g.Expect(err).NotTo(HaveOccurred(), "Cluster API admits ClusterClass %s", class.Name)

	created := &clusterv1.ClusterClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: class.Name},
		Spec:       class.Spec,
	}
	g.Expect(env.Client.Create(ctx, created)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), created) })
	created.Status.ObservedGeneration = created.Generation
	created.Status.Conditions = []metav1.Condition{{
		Type: clusterv1.ClusterClassVariablesReadyCondition, Status: metav1.ConditionTrue,
		Reason: clusterv1.ClusterClassVariablesReadyReason, LastTransitionTime: metav1.Now(),
	}}
	for _, v := range created.Spec.Variables {
		created.Status.Variables = append(created.Status.Variables, clusterv1.ClusterClassStatusVariable{
			Name: v.Name,
			Definitions: []clusterv1.ClusterClassStatusVariableDefinition{{
				From: clusterv1.VariableDefinitionFromInline, Required: ptr.To(ptr.Deref(v.Required, false)), Schema: v.Schema,
			}},
		})
	}
	g.Expect(env.Client.Status().Update(ctx, created)).To(Succeed())

	webhook := &coreadmission.Cluster{Client: env.Client}
	for _, objs := range append([][]*unstructured.Unstructured{applied}, clusters...) {
		cluster := &clusterv1.Cluster{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(clusterOf(objs).Object, cluster)).To(Succeed())
		g.Expect(webhook.Default(ctx, cluster)).To(Succeed(), "Cluster API defaults and checks Cluster %s's variables", cluster.Name)
		_, err := webhook.ValidateCreate(ctx, cluster)
		g.Expect(err).NotTo(HaveOccurred(), "Cluster API admits Cluster %s", cluster.Name)
	}

	// The Cluster's admission did read the class: without a required
	// variable the Cluster is refused.
	cluster := &clusterv1.Cluster{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(clusterOf(applied).Object, cluster)).To(Succeed())
	for _, v := range created.Spec.Variables {
		if !ptr.Deref(v.Required, false) {
			continue
		}
		cluster.Spec.Topology.Variables = slices.DeleteFunc(cluster.Spec.Topology.Variables,
			func(c clusterv1.ClusterVariable) bool { return c.Name == v.Name })
		g.Expect(webhook.Default(ctx, cluster)).To(MatchError(ContainSubstring(v.Name)), "a Cluster without the required variable %s is refused", v.Name)
		break
	}
	// An IPv4 address variable takes a plain IPv4 address only, and keeps
	// it: what else is refused, naming the variable.
	withValue := func(name, value string) *clusterv1.Cluster {
		cluster := &clusterv1.Cluster{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(clusterOf(applied).Object, cluster)).To(Succeed())
		for i := range cluster.Spec.Topology.Variables {
			if cluster.Spec.Topology.Variables[i].Name == name {
				cluster.Spec.Topology.Variables[i].Value = apiextensionsv1.JSON{Raw: []byte(`"` + value + `"`)}
			}
		}
		return cluster
	}
	// An update's variables are checked, against the old ones, where the
	// admission request is at hand (Cluster API's defaulting handler).
	admit := func(old, cluster *clusterv1.Cluster) error {
		if old != nil {
			return webhook.DefaultAndValidateVariables(ctx, cluster, old, created).ToAggregate()
		}
		if err := webhook.Default(ctx, cluster); err != nil {
			return err
		}
		_, err := webhook.ValidateCreate(ctx, cluster)
		return err
	}
	addresses := 0
	for _, v := range created.Spec.Variables {
		if v.Schema.OpenAPIV3Schema.Format != "ipv4" {
			continue
		}
		addresses++
		g.Expect(admit(nil, withValue(v.Name, "10.0.0.7"))).To(Succeed(), "%s 10.0.0.7", v.Name)
		for _, bad := range []string{"vip.example.com", "010.0.0.1", "::ffff:10.0.0.1", "10.0.0.1/32", ""} {
			g.Expect(admit(nil, withValue(v.Name, bad))).To(MatchError(ContainSubstring(v.Name)), "a Cluster whose %s is %q is refused", v.Name, bad)
		}
		old := withValue(v.Name, "10.0.0.7")
		g.Expect(webhook.Default(ctx, old)).To(Succeed())
		g.Expect(admit(old, withValue(v.Name, "10.0.0.8"))).To(MatchError(ContainSubstring(v.Name)), "%s cannot change", v.Name)
		g.Expect(admit(old, withValue(v.Name, "10.0.0.7"))).To(Succeed(), "an update that keeps %s", v.Name)
	}
	if strings.Contains(class.Name, "vsphere") {
		g.Expect(addresses).To(Equal(1), "the vSphere class's controlPlaneEndpointIP is checked")
	}
}

// yamlMisread are strings that YAML reads as something else (a boolean, a
// number, null, a list or a mapping), or not at all, when they are written
// into a document unquoted or between plain double quotes.
var yamlMisread = []string{"true", "no", "1e3", "0x1F", "null", "~", "[a]", "{a: b}", "a: b", "- a", "#a", `a"b\c`, "'a'", "a\nb", " a "}

// checkPatchTemplatesQuote renders every valueFrom.template of the
// flavor's ClusterClass with each string it reads from a variable (a
// variable of type string without an enum, or builtin.cluster.name) set in
// turn to each of yamlMisread, and checks that the string comes out whole
// within a string of the patch's value. Cluster API reads a template's
// output as YAML, so a template must quote what it prints.
func checkPatchTemplatesQuote(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	class := classOf(objs)
	base := patchVariables(clusterOf(objs), class)
	var free []string
	defs, _, _ := unstructured.NestedSlice(class.Object, "spec", "variables")
	for _, d := range defs {
		d := d.(map[string]any)
		schema, _, _ := unstructured.NestedMap(d, "schema", "openAPIV3Schema")
		if schema["type"] == "string" && schema["enum"] == nil {
			free = append(free, d["name"].(string))
		}
	}
	checked := 0
	patches, _, _ := unstructured.NestedSlice(class.Object, "spec", "patches")
	for _, p := range patches {
		definitions, _, _ := unstructured.NestedSlice(p.(map[string]any), "definitions")
		for _, d := range definitions {
			jsonPatches, _, _ := unstructured.NestedSlice(d.(map[string]any), "jsonPatches")
			for _, jp := range jsonPatches {
				text, ok, _ := unstructured.NestedString(jp.(map[string]any), "valueFrom", "template")
				if !ok {
					continue
				}
				for _, name := range append([]string{"builtin.cluster.name"}, free...) {
					if !strings.Contains(text, "."+name+" ") && !strings.Contains(text, "."+name+"}") {
						continue
					}
					for _, s := range yamlMisread {
						vars := maps.Clone(base)
						if name == "builtin.cluster.name" {
							vars["builtin"] = map[string]any{"cluster": map[string]any{"name": s}}
						} else {
							vars[name] = s
						}
						value := renderPatchTemplate(t, text, vars)
						g.Expect(stringLeaves(value)).To(ContainElement(ContainSubstring(s)),
							"patch %v: %s = %q comes out whole in a string of %#v", jp.(map[string]any)["path"], name, s, value)
						checked++
					}
				}
			}
		}
	}
	g.Expect(checked).NotTo(BeZero(), "the ClusterClass's templates read variables")
}

// stringLeaves returns the strings in a decoded YAML value, and those of
// a string that is itself a YAML mapping or list (a manifest in a file's
// content), which whoever reads that file decodes in turn.
func stringLeaves(v any) []string {
	switch v := v.(type) {
	case string:
		var doc any
		if err := yaml.Unmarshal([]byte(v), &doc); err == nil {
			switch doc.(type) {
			case map[string]any, []any:
				return append([]string{v}, stringLeaves(doc)...)
			}
		}
		return []string{v}
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, stringLeaves(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, stringLeaves(e)...)
		}
		return out
	}
	return nil
}
