package discovery

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/capwin/capwin/node-components/layout"
)

// kubeletKubeconfig is kubelet.conf as the kubelet writes it on Windows:
// the CA embedded, the client certificate and key both in one file named
// by path.
func kubeletKubeconfig(ca []byte) *clientcmdapi.Config {
	return &clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {Server: "https://10.0.0.10:6443", CertificateAuthorityData: ca}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {
			ClientCertificate: layout.KubeletClientCert,
			ClientKey:         layout.KubeletClientCert,
		}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth"}},
		CurrentContext: "default-context",
	}
}

type files map[string][]byte

func (f files) ReadFile(p string) ([]byte, error) {
	if b, ok := f[p]; ok {
		return b, nil
	}
	return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
}

func TestRestConfigFor(t *testing.T) {
	pem := []byte("cert and key")
	t.Run("paths are read through the hook", func(t *testing.T) {
		cfg := kubeletKubeconfig([]byte("ca"))
		cfg.Clusters["default-cluster"].CertificateAuthorityData = nil
		cfg.Clusters["default-cluster"].CertificateAuthority = layout.CACert
		rc, err := restConfigFor(cfg, files{layout.KubeletClientCert: pem, layout.CACert: []byte("ca from file")}.ReadFile)
		if err != nil {
			t.Fatal(err)
		}
		if string(rc.CertData) != string(pem) || string(rc.KeyData) != string(pem) || string(rc.CAData) != "ca from file" {
			t.Errorf("rest config has cert %q, key %q, CA %q", rc.CertData, rc.KeyData, rc.CAData)
		}
		if rc.CertFile != "" || rc.KeyFile != "" || rc.CAFile != "" {
			t.Errorf("rest config still names files: %q %q %q", rc.CertFile, rc.KeyFile, rc.CAFile)
		}
		if cfg.AuthInfos["default-auth"].ClientCertificate == "" {
			t.Error("restConfigFor changed the kubeconfig it was given")
		}
	})
	t.Run("embedded data wins", func(t *testing.T) {
		rc, err := restConfigFor(kubeletKubeconfig([]byte("embedded ca")), files{layout.KubeletClientCert: pem}.ReadFile)
		if err != nil {
			t.Fatal(err)
		}
		if string(rc.CAData) != "embedded ca" {
			t.Errorf("CA = %q", rc.CAData)
		}
	})
	t.Run("a token file", func(t *testing.T) {
		cfg := kubeletKubeconfig([]byte("ca"))
		cfg.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{TokenFile: `C:\token`}
		rc, err := restConfigFor(cfg, files{`C:\token`: []byte("t")}.ReadFile)
		if err != nil || rc.BearerToken != "t" || rc.BearerTokenFile != "" {
			t.Fatalf("restConfigFor = %+v, %v", rc, err)
		}
	})
	t.Run("a missing file is named", func(t *testing.T) {
		_, err := restConfigFor(kubeletKubeconfig([]byte("ca")), files{}.ReadFile)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), layout.KubeletClientCert) {
			t.Fatalf("restConfigFor = %v, want a not-exist error naming %s", err, layout.KubeletClientCert)
		}
	})
}

func TestWaitForNodeRejectsABadKubeconfig(t *testing.T) {
	cfg := kubeletKubeconfig([]byte("ca"))
	cfg.CurrentContext = "missing"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = WaitForNode(ctx, data, "win-1", time.Millisecond, files{}.ReadFile)
	if err == nil || !strings.Contains(err.Error(), `current context "missing"`) || ctx.Err() != nil {
		t.Fatalf("WaitForNode = %v, want an immediate error about the context", err)
	}
}
