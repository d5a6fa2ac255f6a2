package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

func TestRenderExample(t *testing.T) {
	for _, example := range []string{"windowskubeadmconfig.yaml", "windowskubeadmconfigtemplate.yaml"} {
		var out, errOut bytes.Buffer
		path := filepath.Join("..", "..", "docs", "examples", example)
		if code := run([]string{"render", "-f", path, "-o", "json"}, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s", example, code, errOut.String())
		}
		// What render prints is what capwin-node accepts.
		cfg, err := nodeconfig.Parse(out.Bytes())
		if err != nil {
			t.Fatalf("%s: capwin-node would refuse the rendered configuration: %v", example, err)
		}
		// As the controller renders it: the node names itself and accepts
		// its own build.
		if cfg.NodeName != "" || cfg.WindowsBuild != "" {
			t.Errorf("%s: nodeName %q, windowsBuild %q: want neither", example, cfg.NodeName, cfg.WindowsBuild)
		}
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"render", "-f", filepath.Join("..", "..", "docs", "examples", "windowskubeadmconfig.yaml")}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"#ps1_sysnative", "# --- node configuration", "gzip+base64 (vSphere guestinfo):", "node named after its computer name, any Windows build"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestRenderNameAndBuild: a node configuration for a node made by hand may
// name the node and pin its Windows build.
func TestRenderNameAndBuild(t *testing.T) {
	example := filepath.Join("..", "..", "docs", "examples", "windowskubeadmconfig.yaml")
	var out, errOut bytes.Buffer
	if code := run([]string{"render", "-f", example, "-o", "json", "--node-name", "win-lab-1", "--windows-release", "ltsc2022"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	cfg, err := nodeconfig.Parse(out.Bytes())
	if err != nil {
		t.Fatalf("capwin-node would refuse the rendered configuration: %v", err)
	}
	if cfg.NodeName != "win-lab-1" || cfg.WindowsBuild != "10.0.20348" {
		t.Errorf("nodeName %q, windowsBuild %q: want win-lab-1 and the ltsc2022 build", cfg.NodeName, cfg.WindowsBuild)
	}

	out.Reset()
	errOut.Reset()
	if code := run([]string{"render", "-f", example, "--windows-release", "ltsc2016"}, &out, &errOut); code != 1 {
		t.Fatalf("an unknown release: want exit 1, got %d", code)
	}
	if !strings.Contains(errOut.String(), "--windows-release") || !strings.Contains(errOut.String(), "ltsc2022") {
		t.Errorf("the error must name the flag and the releases:\n%s", errOut.String())
	}
}

func TestRenderRefusesInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bad.yaml")
	bad := "apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nkind: WindowsKubeadmConfig\nmetadata:\n  name: w\nspec:\n  containerd:\n    runtime: docker\n"
	if err := os.WriteFile(f, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"render", "-f", f}, &out, &errOut); code != 1 {
		t.Fatalf("want exit 1, got %d", code)
	}
	if !strings.Contains(errOut.String(), "spec.containerd.runtime") || !strings.Contains(errOut.String(), "dockershim") {
		t.Errorf("the error must name the field and the rule:\n%s", errOut.String())
	}
}
