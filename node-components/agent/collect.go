package agent

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// collected are the files collect-logs takes as they are. Kubeconfigs,
// keys, certificates and the configuration's extra files are never taken.
var collected = []string{
	layout.AgentLog, layout.BootstrapLog, layout.Status, layout.JoinState, layout.Manifest,
	layout.KubeletConfig, layout.ContainerdConfig, layout.FlannelNetConf, layout.FlannelSubnetEnv, layout.SourceVIP,
}

// CollectLogs writes a zip of what a person needs to see why a node did not
// join: the agent's and the services' logs, the rendered configuration, the
// node configuration without its token, the services as registered and the
// HNS networks and endpoints.
func (a *Agent) CollectLogs(ctx context.Context, w io.Writer) error {
	fsys := a.Host.FS()
	zw := zip.NewWriter(w)
	now := a.now()
	add := func(name string, data []byte) error {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: now})
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return err
	}
	var missing []string
	files := append([]string(nil), collected...)
	for _, dir := range []string{layout.LogDir, layout.CNIConfDir} {
		names, err := fsys.ReadDir(dir)
		if err != nil {
			missing = append(missing, dir+" (unreadable: "+err.Error()+")")
			continue
		}
		for _, n := range names {
			files = append(files, host.Join(dir, n))
		}
	}
	for _, p := range files {
		data, err := fsys.ReadFile(p)
		if err != nil {
			missing = append(missing, p)
			continue
		}
		if err := add(zipName(p), data); err != nil {
			return err
		}
	}
	if data, err := fsys.ReadFile(layout.NodeConfig); err == nil {
		if red, err := redactNodeConfig(data); err == nil {
			if err := add(zipName(layout.NodeConfig), red); err != nil {
				return err
			}
		} else {
			missing = append(missing, layout.NodeConfig+" (unreadable: "+err.Error()+")")
		}
	}
	status, err := a.Status(ctx)
	if err != nil {
		missing = append(missing, "status ("+err.Error()+")")
	} else if err := addJSON(add, "status.json", status); err != nil {
		return err
	}
	var svcs []host.ServiceSpec
	for _, name := range serviceNames {
		if spec, _, err := a.Host.Services().Get(ctx, name); err == nil {
			spec.Environment = redactEnvironment(spec.Environment)
			svcs = append(svcs, spec)
		}
	}
	if err := addJSON(add, "services.json", svcs); err != nil {
		return err
	}
	nets, nerr := a.Host.HNS().Networks(ctx)
	eps, eerr := a.Host.HNS().Endpoints(ctx)
	hnsState := map[string]any{"networks": nets, "endpoints": eps}
	if nerr != nil || eerr != nil {
		hnsState["errors"] = fmt.Sprint(nerr, eerr)
	}
	if err := addJSON(add, "hns.json", hnsState); err != nil {
		return err
	}
	summary := fmt.Sprintf("capwin-node collect-logs at %s\nmissing: %s\n", now.UTC().Format(time.RFC3339), strings.Join(missing, ", "))
	if err := add("README.txt", []byte(summary)); err != nil {
		return err
	}
	return zw.Close()
}

func addJSON(add func(string, []byte) error, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return add(name, append(data, '\n'))
}

// zipName turns C:\var\log\capwin\kubelet.log into C/var/log/capwin/kubelet.log.
func zipName(p string) string {
	return strings.ReplaceAll(strings.Replace(p, ":", "", 1), `\`, "/")
}

// redactNodeConfig drops the token, file contents, commands' text and the
// credentials of proxy, registry mirror and download URLs from a node
// configuration.
func redactNodeConfig(data []byte) ([]byte, error) {
	cfg, err := nodeconfig.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if cfg.Join.Token != "" {
		cfg.Join.Token = "REDACTED"
	}
	for i := range cfg.Files {
		cfg.Files[i].Content = "REDACTED"
	}
	for _, cmds := range []*[]string{&cfg.PreJoinCommands, &cfg.PostJoinCommands} {
		for i, c := range *cmds {
			(*cmds)[i] = fmt.Sprintf("REDACTED (%d bytes)", len(c))
		}
	}
	if p := cfg.Proxy; p != nil {
		p.HTTPProxy = nodeconfig.RedactURL(p.HTTPProxy)
		p.HTTPSProxy = nodeconfig.RedactURL(p.HTTPSProxy)
	}
	for _, m := range cfg.Containerd.RegistryMirrors {
		for i, e := range m.Endpoints {
			m.Endpoints[i] = nodeconfig.RedactURL(e)
		}
	}
	return marshalIndent(cfg)
}

// redactEnvironment redacts URL credentials in a service's environment.
func redactEnvironment(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.Contains(v, "://") {
			v = nodeconfig.RedactURL(v)
		}
		out[i] = k + "=" + v
	}
	return out
}
