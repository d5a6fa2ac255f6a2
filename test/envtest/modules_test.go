package envtest_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capwin/capwin/test/envtest/apiserver"
)

// celModules are the modules hack/tools/envtest keeps at the versions
// Kubernetes' API server requires rather than the management module's: they
// decide which CRD validation rules the API server admits.
var celModules = []string{"github.com/google/cel-go", "github.com/antlr4-go/antlr/v4"}

// TestEnvtestModuleSharesTheLibraries: every package that both the
// management module's tests and the envtest control plane's build compile
// comes from the same module version in both, so that the go command
// compiles it once (hack/tools/envtest/go.mod says why). The CEL modules
// are the exception: they must be the versions k8s.io/apiserver requires.
func TestEnvtestModuleSharesTheLibraries(t *testing.T) {
	root := apiserver.RepoRoot()
	envtestDir := filepath.Join(root, "hack", "tools", "envtest")
	const format = `{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}`
	mgmt := packageModules(t, root, "list", "-deps", "-test", "-f", format, "./...")
	control := packageModules(t, envtestDir, "list", "-deps", "-f", format, "k8s.io/kubernetes/cmd/kube-apiserver", "go.etcd.io/etcd/server/v3", "k8s.io/kubernetes/cmd/kubectl")

	apiserver := control["k8s.io/apiserver/pkg/server"]
	apiserverRequires := map[string]string{}
	for _, line := range strings.Split(goCmd(t, envtestDir, "mod", "graph"), "\n") {
		from, to, ok := strings.Cut(line, " ")
		if !ok || from != "k8s.io/apiserver@"+apiserver.version {
			continue
		}
		if mod, version, ok := strings.Cut(to, "@"); ok {
			apiserverRequires[mod] = version
		}
	}

	if len(apiserverRequires) == 0 {
		t.Fatalf("go mod graph names no requirement of k8s.io/apiserver %s", apiserver.version)
	}
	shared := 0
	wrong := map[string]string{} // module: the version to get
	celWrong := map[string]bool{}
	for pkg, c := range control {
		m, ok := mgmt[pkg]
		if !ok {
			continue
		}
		shared++
		if slices.Contains(celModules, c.path) {
			if want := apiserverRequires[c.path]; c.version != want && !celWrong[c.path] {
				celWrong[c.path] = true
				t.Errorf("hack/tools/envtest selects %s %s; k8s.io/apiserver requires %s, which the envtest API server must keep", c.path, c.version, want)
			}
			continue
		}
		if m.path == c.path && m.version != c.version {
			wrong[c.path] = m.version
		}
	}
	if shared < 500 {
		t.Errorf("only %d packages are in both builds; the check reads the wrong packages", shared)
	}
	if len(wrong) > 0 {
		var get []string
		for mod, version := range wrong {
			get = append(get, mod+"@"+version)
		}
		slices.Sort(get)
		t.Errorf("hack/tools/envtest selects other versions than the management module of modules both builds compile (%d); run:\n  cd hack/tools/envtest && go get %s && go mod tidy", len(get), strings.Join(get, " "))
	}
}

type moduleVersion struct{ path, version string }

// packageModules runs go with args in dir and maps each package it lists to
// its module and version.
func packageModules(t *testing.T, dir string, args ...string) map[string]moduleVersion {
	t.Helper()
	out := map[string]moduleVersion{}
	for _, line := range strings.Split(goCmd(t, dir, args...), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			out[f[0]] = moduleVersion{f[1], f[2]}
		}
	}
	if len(out) == 0 {
		t.Fatalf("go %s in %s listed no package", strings.Join(args, " "), dir)
	}
	return out
}

func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return string(out)
}
