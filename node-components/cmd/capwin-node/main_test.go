package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestValidateCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"validate", "-f", "../../nodeconfig/testdata/valid.json"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "valid capwin.io/node-config/v1 for node win1-md-q3zk5a") {
		t.Errorf("unexpected output %q", out.String())
	}

	out.Reset()
	errOut.Reset()
	bad := strings.NewReader(`{"schemaVersion": "capwin.io/node-config/v1", "nodeName": "X"}`)
	if code := run([]string{"validate", "-f", "-"}, bad, &out, &errOut); code != 1 {
		t.Fatalf("want exit 1 for an invalid configuration, got %d", code)
	}
	for _, want := range []string{"nodeName:", "join.token:", "network.cni:"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, errOut.String())
		}
	}
}
