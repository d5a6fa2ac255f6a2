package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/capwin/capwin/node-components/bundle"
)

// StandInBundleFiles are the files of a bundle as make bundle lays it out.
var StandInBundleFiles = []string{
	"capwin-node.exe", "bin/containerd.exe", "bin/containerd-shim-runhcs-v1.exe", "bin/kubelet.exe", "bin/kube-proxy.exe",
	"bin/flanneld.exe", "bin/csi-proxy.exe", "cni/flannel.exe", "cni/win-overlay.exe", "cni/win-bridge.exe", "cni/host-local.exe",
}

// WriteStandInBundle writes a bundle directory for kubernetesVersion whose
// files are small stand-ins for the real binaries, with a manifest that
// names their real hashes: what capwin-node install needs to lay out a
// simulated node.
func WriteStandInBundle(dir, kubernetesVersion string) error {
	m := bundle.Manifest{KubernetesVersion: kubernetesVersion}
	for _, name := range StandInBundleFiles {
		data := []byte("MZ stand-in for " + name)
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		m.Files = append(m.Files, bundle.File{Name: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))})
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, bundle.ManifestName), data, 0o644)
}
