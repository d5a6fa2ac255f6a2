package render

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/noderules"
)

// The runtime handlers of containerd's CRI plugin. They are containerd 2.x's
// own Windows defaults (internal/cri/config/config_windows.go), and the
// Hyper-V one is the handler a RuntimeClass names.
const (
	RuntimeHandlerProcess = "runhcs-wcow-process"
	RuntimeHandlerHyperV  = "runhcs-wcow-hypervisor"
	runhcsRuntimeType     = "io.containerd.runhcs.v1"
)

// containerd's pipe, and the kubelet's name for it.
const (
	containerdPipe           = `\\.\pipe\containerd-containerd`
	ContainerRuntimeEndpoint = "npipe:////./pipe/containerd-containerd"
)

// containerdConfig is config.toml version 3 (containerd 2.x). Its fields are
// in the order a reader expects; the plugin tables are maps, which the
// encoder writes with sorted keys.
type containerdConfig struct {
	Version int            `toml:"version"`
	Root    string         `toml:"root"`
	State   string         `toml:"state"`
	GRPC    grpcConfig     `toml:"grpc"`
	Plugins map[string]any `toml:"plugins"`
}

type grpcConfig struct {
	Address string `toml:"address"`
}

// ContainerdConfig is containerd 2.x's config.toml for a Windows node.
//
// It sets only what capwin depends on and leaves the rest to containerd's
// Windows defaults: the pipe the kubelet dials (the default, pinned here
// because the kubelet's endpoint depends on it), root and state, the
// sandbox image, the CNI directories of the layout, the registry hosts
// directory, and the runhcs handlers. Process isolation is the default
// handler; with Isolation HyperV a second handler runs each pod in a
// utility VM (SandboxIsolation 1), with the options containerd's own
// default for that handler sets.
//
// containerd decodes each plugin's table over that plugin's defaults
// (cmd/containerd/server/config/config.go Decode, go-toml v2, which adds to
// a default map rather than replacing it), so in process mode its built-in
// Hyper-V handler still exists; a pod reaches it only through a
// RuntimeClass that names it.
func ContainerdConfig(cfg *nodeconfig.Config, pauseImage string) ([]byte, error) {
	if pauseImage == "" {
		return nil, errors.New("rendering containerd's configuration: no pause image")
	}
	if err := checkUTF8("rendering containerd's configuration: the pause image", pauseImage); err != nil {
		return nil, err
	}
	runtimes := map[string]any{
		RuntimeHandlerProcess: map[string]any{
			"runtime_type":          runhcsRuntimeType,
			"container_annotations": []string{"io.microsoft.container.*"},
			"options": map[string]any{
				// Keeps environment variables (which may hold secrets) out
				// of the shim's logs.
				"ScrubLogs": true,
			},
		},
	}
	switch cfg.Containerd.Isolation {
	case "Process":
	case "HyperV":
		runtimes[RuntimeHandlerHyperV] = map[string]any{
			"runtime_type":          runhcsRuntimeType,
			"pod_annotations":       []string{"io.microsoft.virtualmachine.*"},
			"container_annotations": []string{"io.microsoft.container.*"},
			"options": map[string]any{
				"ScrubLogs":        true,
				"SandboxIsolation": 1,
				// A utility VM has fewer cores than the host: scale CPU
				// limits to it, as containerd's default does.
				"ScaleCpuLimitsToSandbox": true,
			},
		}
	default:
		return nil, fmt.Errorf("rendering containerd's configuration: isolation %q is neither Process nor HyperV", cfg.Containerd.Isolation)
	}
	c := containerdConfig{
		Version: 3,
		Root:    layout.ContainerdRoot,
		State:   layout.ContainerdState,
		GRPC:    grpcConfig{Address: containerdPipe},
		Plugins: map[string]any{
			"io.containerd.cri.v1.images": map[string]any{
				"pinned_images": map[string]any{"sandbox": pauseImage},
				"registry":      map[string]any{"config_path": layout.ContainerdCertsDir},
			},
			"io.containerd.cri.v1.runtime": map[string]any{
				"cni": map[string]any{
					// bin_dirs replaced bin_dir in containerd 2.1.
					"bin_dirs": []string{layout.CNIBinDir},
					"conf_dir": layout.CNIConfDir,
				},
				"containerd": map[string]any{
					"default_runtime_name": RuntimeHandlerProcess,
					"runtimes":             runtimes,
				},
			},
		},
	}
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.SetIndentTables(true)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("rendering containerd's configuration: %w", err)
	}
	return b.Bytes(), nil
}

// registryHostsDir is the directory containerd reads a registry's hosts.toml
// from on Windows, where ':' cannot be in a file name: host:port becomes
// host_port_ (containerd core/remotes/docker/config/hosts.go hostDirectory,
// config_windows.go hostPaths).
func registryHostsDir(registry string) string {
	if i := strings.LastIndex(registry, ":"); i > 0 {
		return registry[:i] + "_" + registry[i+1:] + "_"
	}
	return registry
}

// registryServer is the upstream containerd falls back to after the
// mirrors: Docker Hub's API host for docker.io, as containerd's own default
// (hosts.go), and https://<registry> for the others.
func registryServer(registry string) string {
	if registry == "docker.io" {
		return "https://registry-1.docker.io"
	}
	return "https://" + registry
}

// RegistryHosts returns one hosts.toml per registry with mirrors, at
// <ContainerdCertsDir>\<registry>\hosts.toml (docs/hosts.md in containerd),
// or noderules.CheckRegistryMirrors' error for mirrors that cannot be.
// The mirrors are tried in the configured order, so the host tables are
// written in that order (containerd reads them by position); each may pull
// and resolve, as a private mirror is trusted to. The registry "_default"
// applies to every registry without its own file and has no server.
func RegistryHosts(cfg *nodeconfig.Config) ([]File, error) {
	if err := noderules.CheckRegistryMirrors(cfg.Containerd.RegistryMirrors); err != nil {
		return nil, err
	}
	var files []File
	for _, m := range cfg.Containerd.RegistryMirrors {
		var b strings.Builder
		b.WriteString("# Written by capwin-node: the mirrors of " + m.Registry + ", tried in this order.\n")
		if m.Registry != "_default" {
			server, err := tomlString(registryServer(m.Registry))
			if err != nil {
				return nil, fmt.Errorf("rendering registry mirrors: %w", err)
			}
			b.WriteString("server = " + server + "\n")
		}
		for _, e := range m.Endpoints {
			key, err := tomlString(e)
			if err != nil {
				return nil, fmt.Errorf("rendering the mirrors of %q: %w", m.Registry, err)
			}
			b.WriteString("\n[host." + key + "]\n")
			b.WriteString("  capabilities = [\"pull\", \"resolve\"]\n")
		}
		files = append(files, File{
			Path: layout.ContainerdCertsDir + `\` + registryHostsDir(m.Registry) + `\hosts.toml`,
			Data: []byte(b.String()),
		})
	}
	return files, nil
}
