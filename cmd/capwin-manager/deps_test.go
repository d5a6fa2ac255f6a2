package main

import (
	"errors"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const nodeComponents = "github.com/capwin/capwin/node-components/"

// linked are the only node packages capwin-manager may link: the
// management side reads a node's progress through report, renders the
// node configuration (nodeconfig), applies the node's rules to it
// (noderules) and acts on the agent's exit codes in the bootstrap stub
// (exitcode) (docs/architecture.md, "Packages"). Nothing of the agent, its
// host seam, its drivers, its bundle code or its renderers.
var linked = []string{"exitcode", "nodeconfig", "noderules", "report"}

// TestManagerLinksNoNodeAgent: go list -deps ./cmd/capwin-manager names no
// node package but those linked, and names node-components/report, so
// that a list that is empty or not capwin-manager's cannot pass.
func TestManagerLinksNoNodeAgent(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", ".")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list -deps ./cmd/capwin-manager: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list -deps ./cmd/capwin-manager: %v", err)
	}
	imports := map[string][]string{}
	var main string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		imports[f[0]] = f[1:]
		main = f[0] // go list -deps lists a package after its dependencies
	}
	if main != "github.com/capwin/capwin/cmd/capwin-manager" {
		t.Fatalf("go list -deps ended with %q, not capwin-manager:\n%s", main, out)
	}
	if _, ok := imports[nodeComponents+"report"]; !ok {
		t.Errorf("capwin-manager does not link %sreport: the controllers read a node's progress through it, so this list is not what it should be (%d packages)", nodeComponents, len(imports))
	}
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		rel, ok := strings.CutPrefix(pkg, nodeComponents)
		if !ok {
			continue
		}
		if !slices.Contains(linked, strings.Split(rel, "/")[0]) {
			t.Errorf("capwin-manager links %s, through %s", pkg, strings.Join(importChain(imports, main, pkg), " -> "))
		}
	}
}

// importChain is a shortest chain of imports from one package to another.
func importChain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{strings.TrimPrefix(p, "github.com/capwin/capwin/")}, chain...)
			}
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{"(no chain found)"}
}
