package agent

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// TestCollectLogsLeavesSecretsOut collects from a node stopped after
// discovery, when the token, the proxy password, the files and the
// commands' output are all on it.
func TestCollectLogsLeavesSecretsOut(t *testing.T) {
	secrets := map[string]string{
		"the token":          strings.Split(testToken, ".")[1],
		"the proxy password": "pr0xy-s3cret",
		"a mirror password":  "m1rror-s3cret",
		"a file's content":   "file-s3cret",
		"a file's base64":    "ZmlsZS1zM2NyZXQ=",
		"a command":          "command-s3cret",
		"a command's output": "output-s3cret",
	}
	n := newNode(t, func(c *nodeconfig.Config) {
		c.Proxy = &nodeconfig.Proxy{HTTPProxy: "http://user:pr0xy-s3cret@proxy:3128"}
		c.Containerd.RegistryMirrors = []nodeconfig.RegistryMirror{{Registry: "docker.io", Endpoints: []string{"https://user:m1rror-s3cret@mirror.example.com"}}}
		c.Files = []nodeconfig.File{{Path: `C:\etc\secret.txt`, Content: "ZmlsZS1zM2NyZXQ="}} // file-s3cret
		c.PreJoinCommands = []string{"Set-Secret command-s3cret"}
	})
	n.host.SetShell(func(string) ([]byte, error) { return []byte("output-s3cret"), nil })
	if err := n.stopAfter(PhaseDiscovery).Join(context.Background(), layout.NodeConfig); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := n.agent().CollectLogs(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range zr.File {
		names[f.Name] = true
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		_ = rc.Close()
		for what, s := range secrets {
			if strings.Contains(string(data), s) {
				t.Errorf("%s is in %s", what, f.Name)
			}
		}
	}
	for _, want := range []string{"C/ProgramData/capwin/agent.log", "C/ProgramData/capwin/node-config.json", "C/etc/containerd/config.toml", "C/var/lib/kubelet/config.yaml", "services.json", "hns.json"} {
		if !names[want] {
			t.Errorf("the zip lacks %s", want)
		}
	}
	if names["C/ProgramData/capwin/commands.log"] || names["C/etc/kubernetes/bootstrap-kubelet.conf"] {
		t.Errorf("the zip has a file it must leave out: %v", names)
	}
}
