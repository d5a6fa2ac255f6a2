package agent

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capwin/capwin/node-components/bundle"
	"github.com/capwin/capwin/node-components/cni"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

// InstallOptions are capwin-node install's.
type InstallOptions struct {
	// Bundle is the bundle: a .zip or a directory with manifest.json, as a
	// path of the machine running the agent.
	Bundle string
	// HyperV requires the Hyper-V feature too (for Hyper-V isolation).
	HyperV bool
}

// Install lays out the bundle, verifying every file against the manifest,
// and registers the node's services, disabled, with their recovery
// actions. join enables and starts them. It runs at image bake time; a
// second run changes only what differs.
func (a *Agent) Install(ctx context.Context, o InstallOptions) error {
	unlock, err := a.lock()
	if err != nil {
		return err
	}
	defer unlock()
	facts := a.Host.Facts()
	features := []string{host.FeatureContainers}
	if o.HyperV {
		features = append(features, host.FeatureHyperV)
	}
	for _, f := range features {
		ok, err := facts.Feature(ctx, f)
		if err != nil {
			return fmt.Errorf("checking the Windows feature %s: %w", f, err)
		}
		if !ok {
			return fmt.Errorf("the Windows feature %s is not installed: enable it (Install-WindowsFeature -Name %s) and reboot before capwin-node install", f, f)
		}
	}
	src, err := openBundle(o.Bundle)
	if err != nil {
		return err
	}
	defer src.Close() //nolint:errcheck
	m, err := bundle.Parse(src.manifest)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Bundle, err)
	}
	fsys := a.Host.FS()
	copied := 0
	for _, f := range m.Files {
		dest := bundle.Destination(f.Name)
		if same, _ := sameFile(fsys, dest, f); same {
			continue
		}
		data, err := src.read(f.Name)
		if err != nil {
			return fmt.Errorf("reading %s from the bundle: %w", f.Name, err)
		}
		if err := verify(f, data); err != nil {
			return err
		}
		if err := fsys.WriteFile(dest, data, false); err != nil {
			return fmt.Errorf("installing %s: %w", dest, err)
		}
		copied++
	}
	for _, d := range []string{layout.LogDir, layout.KubeletDir, layout.CNIConfDir, layout.CNIBinDir, layout.StateDir} {
		if err := fsys.MkdirAll(d); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := fsys.WriteFile(layout.Manifest, src.manifest, false); err != nil {
		return fmt.Errorf("writing %s: %w", layout.Manifest, err)
	}
	for _, spec := range InstalledServices() {
		if _, err := a.ensureService(ctx, spec); err != nil {
			return err
		}
	}
	if _, err := a.Host.Shell().Run(ctx, FirewallScript); err != nil {
		return fmt.Errorf("adding the firewall rules for the kubelet (TCP 10250) and kube-proxy's health check (TCP 10256): %w", err)
	}
	a.logf("Installed the node bundle for Kubernetes %s: %d files (%d copied, all verified), %d services registered disabled, firewall rules for TCP 10250 and 10256", m.KubernetesVersion, len(m.Files), copied, len(InstalledServices()))
	return nil
}

// FirewallScript opens the kubelet's port (the API server's logs, exec and
// port-forward, metrics) and kube-proxy's health port inbound; it leaves
// rules that exist alone.
//
//go:embed firewall.ps1
var FirewallScript string

// InstalledServices are the services as install registers them: their
// program, dependencies and recovery actions, disabled and without the
// node's flags, which join writes.
func InstalledServices() []host.ServiceSpec {
	// A configuration that has every service, and every CNI driver's; only
	// names, programs, dependencies and recovery actions are kept from it.
	cfg := &nodeconfig.Config{NodeName: "install", CSIProxy: true,
		Network: nodeconfig.Network{Mode: "overlay", VXLANVNI: 4096, VXLANPort: 4789,
			PodCIDRs: []string{"10.244.0.0/16"}, ServiceCIDRs: []string{"10.96.0.0/12"}},
		Containerd: nodeconfig.Containerd{Isolation: "Process"}}
	iface := host.Interface{Name: "Ethernet", IPv4: "192.0.2.1", Subnet: "192.0.2.0/24"}
	specs := render.Services(cfg, iface)
	for _, d := range cni.All() {
		specs = append(specs, d.Services(cfg, iface)...)
	}
	specs = append(specs, render.KubeProxyService(cfg, iface, "install", "192.0.2.2"))
	out := make([]host.ServiceSpec, 0, len(specs))
	for _, s := range specs {
		s.StartType = host.StartDisabled
		s.Command = programOnly(s.Command)
		s.Environment = nil
		out = append(out, s)
	}
	return out
}

// programOnly keeps a command up to its program: the service host's own
// arguments and the program after "--", without the program's flags.
func programOnly(cmd []string) []string {
	if i := slices.Index(cmd, "--"); i >= 0 && i+1 < len(cmd) {
		return slices.Clone(cmd[:i+2])
	}
	return slices.Clone(cmd[:1])
}

func sameFile(fsys host.FS, dest string, f bundle.File) (bool, error) {
	size, err := fsys.Size(dest)
	if err != nil || size != f.Size {
		return false, err
	}
	data, err := fsys.ReadFile(dest)
	if err != nil {
		return false, err
	}
	return verify(f, data) == nil, nil
}

func verify(f bundle.File, data []byte) error {
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		return fmt.Errorf("%s does not match the bundle manifest: sha256 %s, the manifest says %s", f.Name, got, f.SHA256)
	}
	if int64(len(data)) != f.Size {
		return fmt.Errorf("%s does not match the bundle manifest: %d bytes, the manifest says %d", f.Name, len(data), f.Size)
	}
	return nil
}

type bundleSource struct {
	manifest []byte
	read     func(name string) ([]byte, error)
	close    func() error
}

func (b *bundleSource) Close() error {
	if b.close != nil {
		return b.close()
	}
	return nil
}

func openBundle(p string) (*bundleSource, error) {
	if p == "" {
		return nil, errors.New("no bundle given (--bundle DIR or FILE.zip)")
	}
	if strings.HasSuffix(strings.ToLower(p), ".zip") {
		zr, err := zip.OpenReader(p)
		if err != nil {
			return nil, fmt.Errorf("opening the bundle %s: %w", p, err)
		}
		read := func(name string) ([]byte, error) {
			f, err := zr.Open(name)
			if err != nil {
				return nil, err
			}
			defer f.Close() //nolint:errcheck
			return io.ReadAll(f)
		}
		m, err := read(bundle.ManifestName)
		if err != nil {
			zr.Close() //nolint:errcheck
			return nil, fmt.Errorf("the bundle %s has no %s: %w", p, bundle.ManifestName, err)
		}
		return &bundleSource{manifest: m, read: read, close: zr.Close}, nil
	}
	read := func(name string) ([]byte, error) {
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("%q is not a path inside the bundle", name)
		}
		return os.ReadFile(filepath.Join(p, filepath.FromSlash(name)))
	}
	m, err := read(bundle.ManifestName)
	if err != nil {
		return nil, fmt.Errorf("the bundle %s has no %s: %w", p, bundle.ManifestName, err)
	}
	return &bundleSource{manifest: m, read: read}, nil
}
