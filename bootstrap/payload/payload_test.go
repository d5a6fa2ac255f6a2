package payload

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// input is a node of cluster win1 with the given spec, as the reconciler
// renders it: without a node name or a Windows build, reporting its
// progress to the ConfigMap of its Machine's name.
func input(spec bootstrapv1.WindowsKubeadmConfigSpec) Input {
	return Input{
		ProgressConfigMap: "win1-md-0-7f9c4-x2b8q",
		Spec:              &spec,
		KubernetesVersion: "v1.36.3",
		ControlPlaneHost:  "10.0.0.100",
		ControlPlanePort:  6443,
		Token:             "abcdef.0123456789abcdef",
		CACertHashes:      []string{"sha256:7b4a53d0a7b1f9a2d2c6f0e8f3b1c9a4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0"},
		PodCIDRs:          []string{"10.244.0.0/16"},
		ServiceCIDRs:      []string{"10.96.0.0/12"},
	}
}

// variants are the configurations the golden files and the benchmark cover.
func variants() map[string]bootstrapv1.WindowsKubeadmConfigSpec {
	windowsTaint := []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}}
	return map[string]bootstrapv1.WindowsKubeadmConfigSpec{
		"default": {},
		"flannel-overlay": {
			NodeRegistration: bootstrapv1.NodeRegistration{Taints: windowsTaint},
			Network:          bootstrapv1.NetworkSpec{CNI: bootstrapv1.Flannel, Mode: bootstrapv1.Overlay, NodeSubnet: "10.0.0.0/24"},
		},
		"flannel-l2bridge": {
			Network: bootstrapv1.NetworkSpec{CNI: bootstrapv1.Flannel, Mode: bootstrapv1.L2Bridge, NodeSubnet: "10.0.0.0/24"},
		},
		"calico": {
			Network:   bootstrapv1.NetworkSpec{CNI: bootstrapv1.Calico, Mode: bootstrapv1.Overlay, NodeSubnet: "10.0.0.0/24"},
			KubeProxy: bootstrapv1.KubeProxySpec{EnableDSR: ptr.To(true)},
		},
		"http-proxy": {
			Proxy: bootstrapv1.ProxySpec{
				HTTPProxy:  "http://proxy.example.com:3128",
				HTTPSProxy: "http://proxy.example.com:3128",
				NoProxy:    []string{".example.com"},
			},
		},
		"csi-proxy": {CSIProxy: bootstrapv1.CSIProxySpec{Enabled: ptr.To(true)}},
		"extra-files": {
			Files: []bootstrapv1.File{
				{Path: `C:\etc\capwin\motd.txt`, Content: "Managed by capwin\n"},
				{Path: `C:\etc\app\settings.json`, Content: base64.StdEncoding.EncodeToString([]byte(`{"level":"info"}`)), Encoding: "base64"},
			},
			PreJoinCommands:  []string{"Set-TimeZone -Id 'UTC'"},
			PostJoinCommands: []string{"Write-Output 'joined'"},
		},
	}
}

func variantNames() []string {
	var names []string
	for n := range variants() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestGoldenNodeConfigs(t *testing.T) {
	for _, name := range variantNames() {
		t.Run(name, func(t *testing.T) {
			p, err := Render(input(variants()[name]))
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, p.JSON, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			golden := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./bootstrap/payload -update to create it)", err)
			}
			if !bytes.Equal(want, pretty.Bytes()) {
				t.Errorf("%s differs from the rendered configuration (go test -update rewrites it):\n%s", golden, pretty.String())
			}
			// The node accepts what the renderer produces.
			if _, err := nodeconfig.Parse(p.JSON); err != nil {
				t.Errorf("the node would refuse this configuration: %v", err)
			}
		})
	}
}

func TestDefaultVariantFacts(t *testing.T) {
	p, err := Render(input(bootstrapv1.WindowsKubeadmConfigSpec{Network: bootstrapv1.NetworkSpec{NodeSubnet: "10.0.0.0/24"}}))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config
	// The node names itself after its computer name, and the kubelet labels
	// the Node with the host's build.
	if c.NodeName != "" || c.WindowsBuild != "" {
		t.Errorf("nodeName %q, windowsBuild %q: want neither", c.NodeName, c.WindowsBuild)
	}
	if _, ok := c.Labels[corev1.LabelWindowsBuild]; ok {
		t.Errorf("the payload sets label %s, which is the kubelet's", corev1.LabelWindowsBuild)
	}
	if want := []string{"10.244.0.0/16", "10.96.0.0/12", "10.0.0.0/24"}; !equal(c.Network.OutboundNATExceptions, want) {
		t.Errorf("outbound NAT exceptions = %v, want pods, services and node subnet %v", c.Network.OutboundNATExceptions, want)
	}
	if c.Network.VXLANVNI != 4096 || c.Network.VXLANPort != 4789 {
		t.Errorf("VXLAN = %d/%d, want 4096/4789", c.Network.VXLANVNI, c.Network.VXLANPort)
	}
	if c.Kubelet.SystemReserved["memory"] != "1536Mi" || c.Kubelet.KubeReserved["memory"] != "512Mi" {
		t.Errorf("reservations = %v / %v, want 1536Mi + 512Mi", c.Kubelet.SystemReserved, c.Kubelet.KubeReserved)
	}
	if !bytes.HasPrefix(p.Script, []byte("#ps1_sysnative\n")) {
		t.Error("cloudbase-init runs the user data as PowerShell only when it starts with #ps1_sysnative")
	}
}

// TestNameAndBuildWhenGiven: capwin render may name the node and pin its
// build; the build is a check on the node, not a label.
func TestNameAndBuildWhenGiven(t *testing.T) {
	in := input(bootstrapv1.WindowsKubeadmConfigSpec{})
	in.NodeName, in.WindowsBuild = "win1-md-q3zk5a", "10.0.20348"
	p, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Config.NodeName != "win1-md-q3zk5a" || p.Config.WindowsBuild != "10.0.20348" {
		t.Errorf("nodeName %q, windowsBuild %q: want what was given", p.Config.NodeName, p.Config.WindowsBuild)
	}
	if _, ok := p.Config.Labels[corev1.LabelWindowsBuild]; ok {
		t.Errorf("the payload sets label %s, which is the kubelet's", corev1.LabelWindowsBuild)
	}
}

func TestDefaultVariantWithinBudget(t *testing.T) {
	const budget = 16 * 1024
	p, err := Render(input(bootstrapv1.WindowsKubeadmConfigSpec{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Script) > budget {
		t.Errorf("the default payload is %d bytes, over its %d byte budget", len(p.Script), budget)
	}
}

var hostile = []string{
	`'; Remove-Item C:\ -Recurse #`,
	`$(Remove-Item C:\ -Recurse)`,
	"\"@\n'@\nRemove-Item C:\\ -Recurse\n",
	"`; Stop-Computer",
}

// TestNoValueReachesTheScript proves that per-node values travel only as
// data: whatever they contain, the rendered script is the constant stub with
// one base64 literal in place of the placeholder.
func TestNoValueReachesTheScript(t *testing.T) {
	spec := bootstrapv1.WindowsKubeadmConfigSpec{
		NodeRegistration: bootstrapv1.NodeRegistration{},
		Proxy:            bootstrapv1.ProxySpec{HTTPProxy: "http://proxy:3128", NoProxy: hostile},
	}
	for i, h := range hostile {
		v := h
		spec.NodeRegistration.KubeletExtraArgs = append(spec.NodeRegistration.KubeletExtraArgs, bootstrapv1.Arg{Name: "l" + string(rune('a'+i)), Value: &v})
		spec.Files = append(spec.Files, bootstrapv1.File{Path: `C:\x\f` + string(rune('a'+i)) + `.txt`, Content: h})
		spec.PreJoinCommands = append(spec.PreJoinCommands, h)
		spec.PostJoinCommands = append(spec.PostJoinCommands, h)
	}
	p, err := Render(input(spec))
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`(?m)^\$NodeConfig = '([A-Za-z0-9+/=]+)'$`).FindSubmatch(p.Script)
	if literal == nil {
		t.Fatal("the script has no base64 $NodeConfig literal")
	}
	if got := strings.Replace(string(p.Script), string(literal[1]), placeholder, 1); got != Stub() {
		t.Fatal("the script differs from the constant stub in more than the base64 literal")
	}
	decoded, err := base64.StdEncoding.DecodeString(string(literal[1]))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := nodeconfig.Parse(decoded)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hostile {
		if cfg.PreJoinCommands[i] != h || cfg.PostJoinCommands[i] != h || cfg.Kubelet.ExtraArgs[i].Value != h {
			t.Errorf("value %q did not arrive intact as data", h)
		}
		content, _ := base64.StdEncoding.DecodeString(cfg.Files[i].Content)
		if string(content) != h {
			t.Errorf("file content %q did not arrive intact", h)
		}
	}

	// A hostile node name never reaches a node at all: the renderer refuses it.
	in := input(bootstrapv1.WindowsKubeadmConfigSpec{})
	in.NodeName = hostile[0]
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "nodeName") {
		t.Errorf("a hostile node name must be refused, got %v", err)
	}
}

func TestOversizedPayload(t *testing.T) {
	big := strings.Repeat("x", 30000)
	spec := bootstrapv1.WindowsKubeadmConfigSpec{Files: []bootstrapv1.File{
		{Path: `C:\a.txt`, Content: big}, {Path: `C:\b.txt`, Content: big},
	}}
	p, err := Render(input(spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckSize(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a %d byte payload must be too large, got %v", len(p.Script), err)
	}
}

// TestStubSyntax parses the rendered scripts and capwin-node's scripts with the tree-sitter PowerShell
// grammar (hack/ps-syntax). It fails, loudly, where node and npm are missing:
// set CAPWIN_SKIP_PS_SYNTAX=1 to skip it knowingly.
func TestStubSyntax(t *testing.T) {
	if os.Getenv("CAPWIN_SKIP_PS_SYNTAX") != "" {
		t.Skip("CAPWIN_SKIP_PS_SYNTAX is set: THE POWERSHELL SYNTAX OF THE BOOTSTRAP SCRIPT IS NOT CHECKED")
	}
	dir := t.TempDir()
	var files []string
	for _, name := range variantNames() {
		p, err := Render(input(variants()[name]))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name+".ps1")
		if err := os.WriteFile(f, p.Script, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// The node agent's own scripts (its firewall rules) are checked too.
	agentScripts, err := filepath.Glob(filepath.Join("..", "..", "node-components", "agent", "*.ps1"))
	if err != nil || len(agentScripts) == 0 {
		t.Fatalf("no node agent scripts found: %v", err)
	}
	files = append(files, agentScripts...)
	// A broken script proves the check can fail.
	broken := filepath.Join(dir, "broken.ps1")
	if err := os.WriteFile(broken, []byte(strings.Replace(Stub(), "if ($joinExitCode -eq $JoinExitOK) {", "if ($joinExitCode -eq $JoinExitOK {", 1)), 0o600); err != nil {
		t.Fatal(err)
	}

	check := filepath.Join("..", "..", "hack", "ps-syntax", "run.sh")
	out, err := exec.Command(check, files...).CombinedOutput()
	if err != nil {
		t.Fatalf("PowerShell syntax check failed (%v):\n%s", err, out)
	}
	out, err = exec.Command(check, broken).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "syntax error") {
		t.Fatalf("the syntax check passed a broken script (%v):\n%s", err, out)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseScript(t *testing.T) {
	p, err := Render(input(bootstrapv1.WindowsKubeadmConfigSpec{}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseScript(p.Script)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p.JSON) {
		t.Fatalf("ParseScript returned %q, want the rendered JSON %q", got, p.JSON)
	}
	for name, script := range map[string]string{
		"cloud-config":       "#cloud-config\nhostname: n1\n",
		"edited stub":        strings.Replace(string(p.Script), "$ErrorActionPreference = 'Stop'", "", 1),
		"literal not base64": strings.Replace(Stub(), placeholder, "not base64!", 1),
		"empty":              "",
	} {
		if _, err := ParseScript([]byte(script)); err == nil {
			t.Errorf("%s: ParseScript accepted it", name)
		}
	}
}
