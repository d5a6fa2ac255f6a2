package noderules_test

import (
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/noderules"
)

// TestArgProblem: a reserved flag is refused however the flag parsing
// would read it, a name with '=' or dashes is no flag name, and a flag the
// agent does not set passes.
func TestArgProblem(t *testing.T) {
	for _, name := range []string{"kubeconfig", "KubeConfig", "hostname_override", "kubeconfig=x", "--v", " v", ""} {
		if noderules.KubeletArgProblem(name) == "" {
			t.Errorf("KubeletArgProblem(%q) is no problem", name)
		}
	}
	for _, name := range []string{"v", "max-pods", "windows-priorityclass", "feature-gates"} {
		if p := noderules.KubeletArgProblem(name); p != "" {
			t.Errorf("KubeletArgProblem(%q) = %q", name, p)
		}
	}
	if noderules.KubeProxyArgProblem("source_vip") == "" || noderules.KubeProxyArgProblem("v") != "" {
		t.Error("kube-proxy's rule is not its own")
	}
	// The sets are copies: a caller cannot change the rule.
	delete(noderules.KubeletReservedFlags(), "kubeconfig")
	if noderules.KubeletArgProblem("kubeconfig") == "" {
		t.Error("deleting from KubeletReservedFlags' set changed the rule")
	}
}

func TestCheckRegistryMirrors(t *testing.T) {
	ok := []nodeconfig.RegistryMirror{
		{Registry: "docker.io", Endpoints: []string{"https://a", "https://b"}},
		{Registry: "registry.example:5000", Endpoints: []string{"https://a"}},
		{Registry: "_default", Endpoints: []string{"https://a"}},
	}
	if err := noderules.CheckRegistryMirrors(ok); err != nil {
		t.Errorf("valid mirrors: %v", err)
	}
	for _, tt := range []struct {
		mirrors []nodeconfig.RegistryMirror
		want    string
	}{
		{[]nodeconfig.RegistryMirror{{Registry: `..\x`, Endpoints: []string{"https://a"}}}, `"..\\x" is not a registry host name`},
		{[]nodeconfig.RegistryMirror{{Registry: "Docker.io", Endpoints: []string{"https://a"}}, {Registry: "docker.IO", Endpoints: []string{"https://a"}}}, `registry "docker.IO" is listed twice`},
		{[]nodeconfig.RegistryMirror{{Registry: "r:5000", Endpoints: []string{"https://a"}}, {Registry: "R:5000", Endpoints: []string{"https://a"}}}, `registry "R:5000" is listed twice`},
		{[]nodeconfig.RegistryMirror{{Registry: "r"}}, `registry "r" has no mirror endpoints`},
		{[]nodeconfig.RegistryMirror{{Registry: "r", Endpoints: []string{"https://u:secret@m", "https://u:secret@m"}}}, `endpoint "https://u:xxxxx@m" is listed twice`},
		{[]nodeconfig.RegistryMirror{{Registry: "r", Endpoints: []string{"https://m\xff"}}}, `rendering the mirrors of "r": a value is not valid UTF-8`},
		// The first problem in the list's order is the error.
		{[]nodeconfig.RegistryMirror{{Registry: "r"}, {Registry: "bad/name", Endpoints: []string{"https://a"}}}, `registry "r" has no mirror endpoints`},
	} {
		err := noderules.CheckRegistryMirrors(tt.mirrors)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckRegistryMirrors(%v) = %v, want %s", tt.mirrors, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("an endpoint's credentials in the error: %v", err)
		}
	}
}
