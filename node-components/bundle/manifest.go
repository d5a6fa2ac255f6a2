// Package bundle is the node bundle's manifest: every file of the pinned
// Windows node software, where it is installed, and its SHA-256. make bundle
// writes it (hack/bundle); capwin-node install verifies and installs from
// it; join checks that what a node needs is in place.
package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// ManifestName is the manifest's name inside a bundle.
const ManifestName = "manifest.json"

// Manifest lists a bundle's files.
type Manifest struct {
	// KubernetesVersion is the version of the kubelet and kube-proxy in it.
	KubernetesVersion string `json:"kubernetesVersion"`
	Files             []File `json:"files"`
}

// File is one file of a bundle.
type File struct {
	// Name is its path in the bundle, with forward slashes: bin/kubelet.exe,
	// cni/win-overlay.exe, capwin-node.exe.
	Name string `json:"name"`
	// Component, Module and Version say what it was built from.
	Component string `json:"component,omitempty"`
	Module    string `json:"module,omitempty"`
	Version   string `json:"version,omitempty"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
}

var (
	namePattern = regexp.MustCompile(`^(bin/|cni/)?[A-Za-z0-9][A-Za-z0-9._-]*$`)
	hexPattern  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Parse reads and checks a manifest.
func Parse(data []byte) (*Manifest, error) {
	m := &Manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("reading the bundle manifest: %w", err)
	}
	if m.KubernetesVersion == "" {
		return nil, errors.New("the bundle manifest names no kubernetesVersion")
	}
	seen := map[string]bool{}
	for i, f := range m.Files {
		if !namePattern.MatchString(f.Name) {
			return nil, fmt.Errorf("bundle manifest files[%d]: name %q must be bin/NAME, cni/NAME or NAME", i, f.Name)
		}
		if seen[strings.ToLower(f.Name)] {
			return nil, fmt.Errorf("bundle manifest files[%d]: %s is listed twice", i, f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		if !hexPattern.MatchString(f.SHA256) {
			return nil, fmt.Errorf("bundle manifest files[%d] (%s): sha256 must be 64 lower-case hex digits", i, f.Name)
		}
	}
	return m, nil
}

// Destination is where a bundle file is installed on the node.
func Destination(name string) string {
	dir, base := path.Split(name)
	switch dir {
	case "bin/":
		return host.Join(layout.BinDir, base)
	case "cni/":
		return host.Join(layout.CNIBinDir, base)
	}
	return host.Join(layout.InstallDir, base)
}

// Needed are the bundle files a node with this configuration runs but for
// its pod network's, which its CNI driver names (node-components/cni).
func Needed(cfg *nodeconfig.Config) []string {
	names := []string{"bin/containerd.exe", "bin/containerd-shim-runhcs-v1.exe", "bin/kubelet.exe", "bin/kube-proxy.exe"}
	if cfg.CSIProxy {
		names = append(names, "bin/csi-proxy.exe")
	}
	return names
}

// ReadInstalled reads the manifest capwin-node install left on the node.
func ReadInstalled(fsys host.FS) (*Manifest, error) {
	data, err := fsys.ReadFile(layout.Manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing: capwin-node install has not run in this image", layout.Manifest)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", layout.Manifest, err)
	}
	return Parse(data)
}

// CheckInstalled checks that each needed file is in the manifest and at its
// destination with the manifest's size (install verified the hashes).
func CheckInstalled(fsys host.FS, m *Manifest, needed []string) error {
	byName := map[string]File{}
	for _, f := range m.Files {
		byName[f.Name] = f
	}
	var missing []string
	for _, n := range needed {
		f, ok := byName[n]
		if !ok {
			missing = append(missing, n+" (not in the bundle)")
			continue
		}
		size, err := fsys.Size(Destination(n))
		if err != nil {
			missing = append(missing, Destination(n)+" (missing)")
			continue
		}
		if size != f.Size {
			missing = append(missing, fmt.Sprintf("%s (%d bytes, the manifest says %d)", Destination(n), size, f.Size))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the node bundle is incomplete: %s; rebuild the image with capwin-node install", strings.Join(missing, ", "))
	}
	return nil
}

// minContainerd is the oldest containerd that reads the configuration
// capwin renders: the CRI plugin's bin_dirs arrived in 2.1, and 2.0 would
// silently look for CNI plugins elsewhere.
var minContainerd = [2]int{2, 1}

// CheckVersions refuses a bundle whose components are older than what the
// rendered configuration needs. A file without a version (a hand-made
// bundle) is not judged.
func CheckVersions(m *Manifest) error {
	for _, f := range m.Files {
		if f.Name != "bin/containerd.exe" || f.Version == "" {
			continue
		}
		var major, minor int
		if _, err := fmt.Sscanf(strings.TrimPrefix(f.Version, "v"), "%d.%d", &major, &minor); err != nil {
			return fmt.Errorf("the bundle's containerd version %q does not parse", f.Version)
		}
		if major < minContainerd[0] || (major == minContainerd[0] && minor < minContainerd[1]) {
			return fmt.Errorf("the bundle's containerd is %s; capwin's config.toml needs containerd %d.%d or later (the CRI plugin's bin_dirs)", f.Version, minContainerd[0], minContainerd[1])
		}
	}
	return nil
}
