package release_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"text/template"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// patchTarget says which of a ClusterClass's templates an object stands
// for: the infrastructure cluster's, the control plane's (its own template
// and its machines'), or a machine deployment class's.
type patchTarget struct {
	infrastructureCluster  bool
	controlPlane           bool
	machineDeploymentClass string
}

// asTheClusterGetsIt returns the template named kind/name in objs as the
// flavor's Cluster gets it: for a Cluster with a topology, the
// ClusterClass's patches for target applied, with the Cluster's variable
// values (or the class's defaults) and the builtin variables
// builtin.cluster.name and builtin.cluster.namespace. Patches with
// jsonPatches only, whose values are plain, a variable or a Go template of
// variables: what capwin's ClusterClasses use; the test fails on anything
// else rather than skip it.
func asTheClusterGetsIt(t *testing.T, objs []*unstructured.Unstructured, kind, name string, target patchTarget) *unstructured.Unstructured {
	t.Helper()
	var obj, cluster, class *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == kind && o.GetName() == name:
			obj = o.DeepCopy()
		case o.GetKind() == "Cluster":
			cluster = o
		case o.GetKind() == "ClusterClass":
			class = o
		}
	}
	if obj == nil {
		t.Fatalf("the flavor has no %s %s", kind, name)
	}
	if class == nil {
		return obj
	}
	vars := patchVariables(cluster, class)
	patches, _, _ := unstructured.NestedSlice(class.Object, "spec", "patches")
	var ops []map[string]any
	for _, p := range patches {
		definitions, _, _ := unstructured.NestedSlice(p.(map[string]any), "definitions")
		for _, d := range definitions {
			d := d.(map[string]any)
			if !selects(d["selector"].(map[string]any), kind, target) {
				continue
			}
			jsonPatches, _, _ := unstructured.NestedSlice(d, "jsonPatches")
			for _, jp := range jsonPatches {
				jp := jp.(map[string]any)
				op := map[string]any{"op": jp["op"], "path": jp["path"]}
				switch from, _, _ := unstructured.NestedMap(jp, "valueFrom"); {
				case from == nil:
					op["value"] = jp["value"]
				case from["variable"] != nil:
					v, ok := vars[from["variable"].(string)]
					if !ok {
						t.Fatalf("patch %s reads variable %s, which has no value", jp["path"], from["variable"])
					}
					op["value"] = v
				case from["template"] != nil:
					op["value"] = renderPatchTemplate(t, from["template"].(string), vars)
				default:
					t.Fatalf("patch %s: valueFrom %v", jp["path"], from)
				}
				ops = append(ops, op)
			}
		}
	}
	if len(ops) == 0 {
		return obj
	}
	doc, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(doc)
	if err != nil {
		t.Fatal(err)
	}
	// The patches' paths start at the template object's root.
	original, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(original)
	if err != nil {
		t.Fatalf("the ClusterClass's patches do not apply to %s %s: %v", kind, name, err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(patched); err != nil {
		t.Fatal(err)
	}
	return out
}

// patchVariables are the variables a ClusterClass's patches see for a
// Cluster: the builtin builtin.cluster.name and builtin.cluster.namespace,
// the class's defaults and the Cluster's values.
func patchVariables(cluster, class *unstructured.Unstructured) map[string]any {
	vars := map[string]any{
		"builtin": map[string]any{"cluster": map[string]any{"name": cluster.GetName(), "namespace": cluster.GetNamespace()}},
	}
	defs, _, _ := unstructured.NestedSlice(class.Object, "spec", "variables")
	for _, d := range defs {
		d := d.(map[string]any)
		if v, ok, _ := unstructured.NestedFieldNoCopy(d, "schema", "openAPIV3Schema", "default"); ok {
			vars[d["name"].(string)] = v
		}
	}
	values, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "topology", "variables")
	for _, v := range values {
		v := v.(map[string]any)
		vars[v["name"].(string)] = v["value"]
	}
	return vars
}

func selects(selector map[string]any, kind string, target patchTarget) bool {
	if selector["kind"] != kind {
		return false
	}
	match, _, _ := unstructured.NestedMap(selector, "matchResources")
	if target.infrastructureCluster {
		return match["infrastructureCluster"] == true
	}
	if target.controlPlane {
		return match["controlPlane"] == true
	}
	names, _, _ := unstructured.NestedStringSlice(match, "machineDeploymentClass", "names")
	return target.machineDeploymentClass != "" && slices.Contains(names, target.machineDeploymentClass)
}

// renderPatchTemplate renders a patch's valueFrom.template, a Go template
// of the variables whose output is YAML.
func renderPatchTemplate(t *testing.T, text string, vars map[string]any) any {
	t.Helper()
	tmpl, err := template.New("patch").Option("missingkey=error").Parse(text)
	if err != nil {
		t.Fatalf("patch template: %v", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, vars); err != nil {
		t.Fatalf("patch template: %v", err)
	}
	var v any
	if err := yaml.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatalf("patch template output is not YAML: %v\n%s", err, buf.String())
	}
	return v
}

// infrastructureCluster returns the name and spec of the flavor's
// HybridCluster as the cluster gets it: the HybridCluster itself, or, for
// a Cluster with a topology, the ClusterClass's HybridClusterTemplate with
// the class's patches applied and the name the class's naming template
// gives it (Cluster API's default, <cluster>-<random>, when it has none).
func infrastructureCluster(t *testing.T, objs []*unstructured.Unstructured) (string, map[string]any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "HybridCluster" {
			spec, _, _ := unstructured.NestedMap(o.Object, "spec")
			return o.GetName(), spec
		}
	}
	cluster, class := clusterOf(objs), classOf(objs)
	if cluster == nil || class == nil {
		t.Fatal("the flavor has neither a HybridCluster nor a ClusterClass")
	}
	ref, _, _ := unstructured.NestedStringMap(class.Object, "spec", "infrastructure", "templateRef")
	tmpl := asTheClusterGetsIt(t, objs, ref["kind"], ref["name"], patchTarget{infrastructureCluster: true})
	spec, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec")
	naming, _, _ := unstructured.NestedString(class.Object, "spec", "infrastructure", "naming", "template")
	if naming == "" {
		naming = "{{ .cluster.name }}-{{ .random }}"
	}
	name, err := template.New("naming").Option("missingkey=error").Parse(naming)
	if err != nil {
		t.Fatalf("the ClusterClass's infrastructure naming template: %v", err)
	}
	var buf bytes.Buffer
	if err := name.Execute(&buf, map[string]any{"cluster": map[string]any{"name": cluster.GetName()}, "random": "xkcdq"}); err != nil {
		t.Fatalf("the ClusterClass's infrastructure naming template: %v", err)
	}
	return buf.String(), spec
}

// machineRoles are the flavors' kinds of machine, by the bootstrap
// template kind of their MachineDeployment or machine deployment class.
var machineRoles = map[string]string{"KubeadmConfigTemplate": "linux", "WindowsKubeadmConfigTemplate": "windows"}

// machineTemplates returns the flavor's HybridMachineTemplates as the
// cluster gets them, by role: control-plane, linux (the Linux workers) and
// windows (the Windows workers). For a Cluster with a topology they are the
// ClusterClass's templates with the class's patches applied.
func machineTemplates(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	add := func(role, kind, name string, target patchTarget) {
		if _, ok := out[role]; ok {
			t.Fatalf("the flavor has two %s machine templates", role)
		}
		out[role] = asTheClusterGetsIt(t, objs, kind, name, target)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "KubeadmControlPlane":
			ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "machineTemplate", "spec", "infrastructureRef")
			add("control-plane", ref["kind"], ref["name"], patchTarget{})
		case "MachineDeployment":
			bootstrap, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "bootstrap", "configRef", "kind")
			ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "spec", "infrastructureRef")
			add(machineRoles[bootstrap], ref["kind"], ref["name"], patchTarget{})
		case "ClusterClass":
			ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "controlPlane", "machineInfrastructure", "templateRef")
			add("control-plane", ref["kind"], ref["name"], patchTarget{controlPlane: true})
			classes, _, _ := unstructured.NestedSlice(o.Object, "spec", "workers", "machineDeployments")
			for _, c := range classes {
				c := c.(map[string]any)
				bootstrap, _, _ := unstructured.NestedString(c, "bootstrap", "templateRef", "kind")
				ref, _, _ := unstructured.NestedStringMap(c, "infrastructure", "templateRef")
				add(machineRoles[bootstrap], ref["kind"], ref["name"], patchTarget{machineDeploymentClass: c["class"].(string)})
			}
		}
	}
	return out
}

// classTemplates returns every template the flavor's ClusterClass names,
// as the flavor's Cluster gets it (the class's patches applied), or nil
// for a flavor without a ClusterClass.
func classTemplates(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	class := classOf(objs)
	if class == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	get := func(target patchTarget, path ...string) {
		ref, ok, _ := unstructured.NestedStringMap(class.Object, append(path, "templateRef")...)
		if !ok {
			t.Fatalf("the ClusterClass has no %s.templateRef", strings.Join(path, "."))
		}
		out = append(out, asTheClusterGetsIt(t, objs, ref["kind"], ref["name"], target))
	}
	get(patchTarget{infrastructureCluster: true}, "spec", "infrastructure")
	get(patchTarget{controlPlane: true}, "spec", "controlPlane")
	get(patchTarget{controlPlane: true}, "spec", "controlPlane", "machineInfrastructure")
	classes, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	for _, c := range classes {
		c := c.(map[string]any)
		target := patchTarget{machineDeploymentClass: c["class"].(string)}
		for _, part := range []string{"bootstrap", "infrastructure"} {
			ref, _, _ := unstructured.NestedStringMap(c, part, "templateRef")
			out = append(out, asTheClusterGetsIt(t, objs, ref["kind"], ref["name"], target))
		}
	}
	return out
}

func classOf(objs []*unstructured.Unstructured) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == "ClusterClass" {
			return o
		}
	}
	return nil
}
