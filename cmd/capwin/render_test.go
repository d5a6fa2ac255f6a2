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
		if cfg.WindowsBuild != "10.0.20348" {
			t.Errorf("%s: windowsBuild = %q, want the ltsc2022 build", example, cfg.WindowsBuild)
		}
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"render", "-f", filepath.Join("..", "..", "docs", "examples", "windowskubeadmconfig.yaml")}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"#ps1_sysnative", "# --- node configuration", "gzip+base64 (vSphere guestinfo):"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
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
