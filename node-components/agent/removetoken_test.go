package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/nodeconfig/nodeconfigtest"
)

// TestRemoveToken: the token leaves the node configuration; a missing
// configuration is nothing to scrub; one that cannot be decoded is an
// error, since it may still hold the token.
func TestRemoveToken(t *testing.T) {
	const path = `C:\ProgramData\capwin\node.json`
	fsys := host.DirFS{Root: t.TempDir()}
	if err := removeToken(fsys, path); err != nil {
		t.Fatalf("no configuration: %v", err)
	}

	cfg := nodeconfigtest.Worker()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile(path, data, true); err != nil {
		t.Fatal(err)
	}
	if err := removeToken(fsys, path); err != nil {
		t.Fatal(err)
	}
	left, err := fsys.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(left), cfg.Join.Token) {
		t.Error("the token is still in the configuration")
	}
	if _, err := nodeconfig.Decode(bytes.NewReader(left)); err != nil {
		t.Errorf("the scrubbed configuration does not decode: %v", err)
	}

	broken := append([]byte(`{"unknownField": true, `), data[1:]...)
	if err := fsys.WriteFile(path, broken, true); err != nil {
		t.Fatal(err)
	}
	if err := removeToken(fsys, path); err == nil {
		t.Error("a configuration that cannot be decoded, perhaps with its token, was taken as scrubbed")
	}
}
