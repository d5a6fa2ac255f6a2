package release_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"text/template"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// patchTarget says which of a ClusterClass's templates an object stands
// for: the control plane's, or a machine deployment class's.
type patchTarget struct {
	controlPlane           bool
	machineDeploymentClass string
}

// asTheClusterGetsIt returns the template named kind/name in objs as the
// flavor's Cluster gets it: for a Cluster with a topology, the
// ClusterClass's patches for target applied, with the Cluster's variable
// values (or the class's defaults). Patches with jsonPatches only, whose
// values are plain, a variable or a Go template of variables: what capwin's
// ClusterClasses use; the test fails on anything else rather than skip it.
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
	vars := map[string]any{}
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

func selects(selector map[string]any, kind string, target patchTarget) bool {
	if selector["kind"] != kind {
		return false
	}
	match, _, _ := unstructured.NestedMap(selector, "matchResources")
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
