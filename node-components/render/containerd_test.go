package render

import (
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	gold "github.com/capwin/capwin/node-components/internal/golden"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

func TestPauseImage(t *testing.T) {
	for _, build := range []string{"10.0.17763", "10.0.20348", "10.0.26100"} {
		img, err := PauseImage(build)
		if err != nil {
			t.Errorf("PauseImage(%s): %v", build, err)
		}
		if img == "" {
			t.Errorf("PauseImage(%s) is empty", build)
		}
	}
	_, err := PauseImage("10.0.19041")
	if err == nil {
		t.Fatal("an unknown build has no pause image")
	}
	for _, p := range PauseImages {
		if !strings.Contains(err.Error(), p.Build) || !strings.Contains(err.Error(), p.Release) {
			t.Errorf("the error %q does not name %s (%s)", err, p.Build, p.Release)
		}
	}
}

// containerdDoc is the part of config.toml the tests read back.
type containerdDoc struct {
	Version int
	Root    string
	State   string
	GRPC    struct{ Address string }
	Plugins struct {
		Images struct {
			PinnedImages map[string]string `toml:"pinned_images"`
			Registry     struct {
				ConfigPath string `toml:"config_path"`
			}
		} `toml:"io.containerd.cri.v1.images"`
		Runtime struct {
			CNI struct {
				BinDirs []string `toml:"bin_dirs"`
				ConfDir string   `toml:"conf_dir"`
			}
			Containerd struct {
				DefaultRuntimeName string `toml:"default_runtime_name"`
				Runtimes           map[string]struct {
					RuntimeType string         `toml:"runtime_type"`
					Options     map[string]any `toml:"options"`
				}
			}
		} `toml:"io.containerd.cri.v1.runtime"`
	}
}

func parseContainerd(t *testing.T, data []byte) containerdDoc {
	t.Helper()
	var d containerdDoc
	if err := toml.Unmarshal(data, &d); err != nil {
		t.Fatalf("config.toml does not parse: %v\n%s", err, data)
	}
	return d
}

// The runtime handlers and their options are containerd 2.x's Windows
// defaults (containerd internal/cri/config/config_windows.go); the layout of
// a version 3 file is docs/cri/config.md's.
func TestContainerdConfigGoldenAgainstContainerdWindowsDefaults(t *testing.T) {
	for name, cfg := range map[string]*nodeconfig.Config{
		"containerd-process.toml": newNode().obj(),
		"containerd-hyperv.toml":  newNode().hyperV().obj(),
	} {
		t.Run(name, func(t *testing.T) {
			data, err := ContainerdConfig(cfg, "registry.k8s.io/pause:3.10.2")
			if err != nil {
				t.Fatal(err)
			}
			gold.Compare(t, name, data)
		})
	}
}

func TestContainerdConfigFacts(t *testing.T) {
	d := parseContainerd(t, must(ContainerdConfig(newNode().obj(), "registry.k8s.io/pause:3.10.2")))
	if d.Version != 3 {
		t.Errorf("version = %d, want 3 (containerd 2.x)", d.Version)
	}
	if d.Root != layout.ContainerdRoot || d.State != layout.ContainerdState {
		t.Errorf("root, state = %q, %q; want the layout's", d.Root, d.State)
	}
	if d.GRPC.Address != `\\.\pipe\containerd-containerd` {
		t.Errorf("grpc address = %q, want the pipe the kubelet dials", d.GRPC.Address)
	}
	if got := d.Plugins.Images.PinnedImages["sandbox"]; got != "registry.k8s.io/pause:3.10.2" {
		t.Errorf("sandbox image = %q", got)
	}
	if got := d.Plugins.Images.Registry.ConfigPath; got != layout.ContainerdCertsDir {
		t.Errorf("registry config_path = %q, want %q", got, layout.ContainerdCertsDir)
	}
	if cni := d.Plugins.Runtime.CNI; len(cni.BinDirs) != 1 || cni.BinDirs[0] != layout.CNIBinDir || cni.ConfDir != layout.CNIConfDir {
		t.Errorf("cni = %+v, want the layout's directories", cni)
	}
	rt := d.Plugins.Runtime.Containerd
	if rt.DefaultRuntimeName != RuntimeHandlerProcess {
		t.Errorf("default runtime = %q", rt.DefaultRuntimeName)
	}
	if len(rt.Runtimes) != 1 || rt.Runtimes[RuntimeHandlerProcess].RuntimeType != "io.containerd.runhcs.v1" {
		t.Errorf("process-isolation runtimes = %+v, want runhcs only", rt.Runtimes)
	}

	d = parseContainerd(t, must(ContainerdConfig(newNode().hyperV().obj(), "registry.k8s.io/pause:3.10.2")))
	rt = d.Plugins.Runtime.Containerd
	if rt.DefaultRuntimeName != RuntimeHandlerProcess {
		t.Errorf("Hyper-V nodes keep process isolation as the default; got %q", rt.DefaultRuntimeName)
	}
	hv, ok := rt.Runtimes[RuntimeHandlerHyperV]
	if !ok {
		t.Fatalf("no %s handler: %+v", RuntimeHandlerHyperV, rt.Runtimes)
	}
	if hv.RuntimeType != "io.containerd.runhcs.v1" || hv.Options["SandboxIsolation"] != int64(1) {
		t.Errorf("%s = %+v, want runhcs with SandboxIsolation 1", RuntimeHandlerHyperV, hv)
	}

	if _, err := ContainerdConfig(newNode().obj(), ""); err == nil {
		t.Error("a configuration without a pause image rendered")
	}
	bad := newNode().obj()
	bad.Containerd.Isolation = "Docker"
	if _, err := ContainerdConfig(bad, "p"); err == nil {
		t.Error("an unknown isolation rendered")
	}
}

func mirroredNode() *nodeconfig.Config {
	return newNode().mirrors(
		nodeconfig.RegistryMirror{Registry: "docker.io", Endpoints: []string{"https://mirror-a.example.com", "https://mirror-b.example.com:8443/v2-proxy"}},
		nodeconfig.RegistryMirror{Registry: "registry.example.com:5000", Endpoints: []string{"http://10.0.0.5:5000"}},
		nodeconfig.RegistryMirror{Registry: "_default", Endpoints: []string{"https://everything.example.com"}},
	).obj()
}

// hostsDoc is a hosts.toml as containerd reads it
// (core/remotes/docker/config/hosts.go parseHostsFile).
type hostsDoc struct {
	Server string                    `toml:"server"`
	Host   map[string]map[string]any `toml:"host"`
}

// Checked against containerd docs/hosts.md ("Setup a Local Mirror for
// Docker", "Setup Default Mirror for All Registries") and its Windows
// directory naming (config_windows.go).
func TestRegistryHostsGoldenAgainstContainerdHostsDoc(t *testing.T) {
	files, err := RegistryHosts(mirroredNode())
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{
		layout.ContainerdCertsDir + `\docker.io\hosts.toml`,
		layout.ContainerdCertsDir + `\registry.example.com_5000_\hosts.toml`,
		layout.ContainerdCertsDir + `\_default\hosts.toml`,
	}
	if len(files) != len(wantPaths) {
		t.Fatalf("got %d files, want %d", len(files), len(wantPaths))
	}
	for i, f := range files {
		if f.Path != wantPaths[i] {
			t.Errorf("file %d at %s, want %s", i, f.Path, wantPaths[i])
		}
		if f.Private {
			t.Errorf("%s is private; it holds no secret", f.Path)
		}
		name := "hosts-" + strings.TrimSuffix(strings.TrimPrefix(f.Path, layout.ContainerdCertsDir+`\`), `\hosts.toml`) + ".toml"
		gold.Compare(t, name, f.Data)
	}

	var docker hostsDoc
	if err := toml.Unmarshal(files[0].Data, &docker); err != nil {
		t.Fatal(err)
	}
	if docker.Server != "https://registry-1.docker.io" {
		t.Errorf("docker.io server = %q, want Docker Hub's API host", docker.Server)
	}
	for _, e := range []string{"https://mirror-a.example.com", "https://mirror-b.example.com:8443/v2-proxy"} {
		caps, _ := docker.Host[e]["capabilities"].([]any)
		if len(caps) != 2 || caps[0] != "pull" || caps[1] != "resolve" {
			t.Errorf("host %s capabilities = %v, want [pull resolve]", e, caps)
		}
	}
	// containerd tries the hosts in the file's order.
	text := string(files[0].Data)
	if strings.Index(text, "mirror-a") > strings.Index(text, "mirror-b") {
		t.Error("the mirrors are not in their configured order")
	}
	var def hostsDoc
	if err := toml.Unmarshal(files[2].Data, &def); err != nil {
		t.Fatal(err)
	}
	if def.Server != "" {
		t.Errorf("_default has server %q; it must fall back to each image's own registry", def.Server)
	}
}

func TestRegistryHostsRefusals(t *testing.T) {
	for name, m := range map[string][]nodeconfig.RegistryMirror{
		"path traversal": {{Registry: `..\..\Windows`, Endpoints: []string{"https://m"}}},
		"slash":          {{Registry: "example.com/evil", Endpoints: []string{"https://m"}}},
		"empty":          {{Registry: "", Endpoints: []string{"https://m"}}},
		"twice":          {{Registry: "docker.io", Endpoints: []string{"https://a"}}, {Registry: "DOCKER.IO", Endpoints: []string{"https://b"}}},
		"no endpoints":   {{Registry: "docker.io"}},
		"endpoint twice": {{Registry: "docker.io", Endpoints: []string{"https://a", "https://a"}}},
		"invalid UTF-8":  {{Registry: "docker.io", Endpoints: []string{"https://\xff"}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := RegistryHosts(newNode().mirrors(m...).obj()); err == nil {
				t.Error("rendered")
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
