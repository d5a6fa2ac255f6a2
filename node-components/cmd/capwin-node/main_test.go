package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/agent"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/render"
)

func TestValidateCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"validate", "-f", "../../nodeconfig/testdata/valid.json"}, nil, &out, &errOut, newHost); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "valid capwin.io/node-config/v1 for node win1-md-q3zk5a") {
		t.Errorf("unexpected output %q", out.String())
	}

	// Without nodeName the node takes its computer name.
	data, err := os.ReadFile("../../nodeconfig/testdata/valid.json")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	unnamed := strings.Replace(string(data), `"nodeName": "win1-md-q3zk5a",`, "", 1)
	if code := run(context.Background(), []string{"validate", "-f", "-"}, strings.NewReader(unnamed), &out, &errOut, newHost); code != 0 {
		t.Fatalf("without nodeName: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "for a node named after its computer name") {
		t.Errorf("without nodeName: unexpected output %q", out.String())
	}

	out.Reset()
	errOut.Reset()
	bad := strings.NewReader(`{"schemaVersion": "capwin.io/node-config/v1", "nodeName": "X"}`)
	if code := run(context.Background(), []string{"validate", "-f", "-"}, bad, &out, &errOut, newHost); code != 1 {
		t.Fatalf("want exit 1 for an invalid configuration, got %d", code)
	}
	for _, want := range []string{"nodeName:", "join.token:", "network.cni:"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, errOut.String())
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"status", "--nope"}, {"service"}, {"service", "run", "--name", "x"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, nil, &out, &errOut, newHost); code != agent.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, agent.ExitUsage)
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"help"}, nil, &out, io.Discard, newHost); code != 0 || !strings.Contains(out.String(), "collect-logs") {
		t.Errorf("help: exit %d, %q", code, out.String())
	}
}

// TestStatusAndCollectLogs runs the commands against an in-memory host on
// which a join failed in discovery, the moment a person reaches for them.
func TestStatusAndCollectLogs(t *testing.T) {
	h := sim.New(sim.Options{Root: t.TempDir()})
	token := "abcdef.0123456789abcdef"
	cfg, err := os.ReadFile("../../nodeconfig/testdata/valid.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.FS().WriteFile(layout.NodeConfig, cfg, true); err != nil {
		t.Fatal(err)
	}
	// A join that fails at once: no bundle is installed.
	a := &agent.Agent{Host: h, Log: io.Discard, ControlPlane: agent.KubeadmControlPlane{}}
	if err := a.Join(context.Background(), layout.NodeConfig); err == nil {
		t.Fatal("join succeeded without a bundle")
	}
	open := func() (host.Host, error) { return h, nil }

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"status"}, nil, &out, &errOut, open); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Failed in phase preflight", "capwin-node install has not run", "kubelet", "not registered"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"status", "-o", "json"}, nil, &out, &errOut, open); code != 0 || !strings.Contains(out.String(), `"phase": "preflight"`) {
		t.Errorf("status -o json: exit %d:\n%s", code, out.String())
	}

	zipPath := filepath.Join(t.TempDir(), "logs.zip")
	if code := run(context.Background(), []string{"collect-logs", "-o", zipPath}, nil, &out, &errOut, open); code != 0 {
		t.Fatalf("collect-logs: exit %d: %s", code, errOut.String())
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close() //nolint:errcheck // read only
	names := map[string]bool{}
	for _, f := range zr.File {
		names[f.Name] = true
		rc, _ := f.Open()
		data, _ := io.ReadAll(rc)
		_ = rc.Close()
		if strings.Contains(string(data), strings.Split(token, ".")[1]) {
			t.Errorf("%s in the zip holds the bootstrap token", f.Name)
		}
	}
	for _, want := range []string{"C/ProgramData/capwin/agent.log", "C/ProgramData/capwin/node-config.json", "status.json", "services.json", "hns.json", "README.txt"} {
		if !names[want] {
			t.Errorf("the zip lacks %s; it has %v", want, names)
		}
	}
}

// runStatus runs capwin-node status on h, and status -o json.
func runStatus(t *testing.T, h host.Host) (text string, js []byte) {
	t.Helper()
	open := func() (host.Host, error) { return h, nil }
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"status"}, nil, &out, &errOut, open); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut.String())
	}
	text = out.String()
	out.Reset()
	if code := run(context.Background(), []string{"status", "-o", "json"}, nil, &out, &errOut, open); code != 0 {
		t.Fatalf("status -o json: exit %d: %s", code, errOut.String())
	}
	return text, out.Bytes()
}

// TestStatusShowsTheLicence: status says the Windows licence, and what an
// evaluation's end means for the node, in text and in JSON.
func TestStatusShowsTheLicence(t *testing.T) {
	for _, tc := range []struct {
		licence host.Licence
		want    string
	}{{
		licence: host.Licence{Edition: "ServerDatacenter", Status: host.LicenceLicensed, Channel: "VOLUME_KMSCLIENT", RemainingMinutes: 180 * 24 * 60},
		want:    "Licence:   ServerDatacenter, Licensed (VOLUME_KMSCLIENT)\n",
	}, {
		licence: host.Licence{Edition: "ServerDatacenterEval", Evaluation: true, Status: host.LicenceLicensed, Channel: "TIMEBASED_EVAL", RemainingMinutes: 30*24*60 + 60},
		want:    "Licence:   ServerDatacenterEval, Licensed (TIMEBASED_EVAL), 30 days left: an evaluation; once it ends Windows shuts this machine down every hour\n",
	}, {
		licence: host.Licence{Edition: "ServerDatacenterEval", Evaluation: true, Status: host.LicenceUnlicensed, Channel: "TIMEBASED_EVAL"},
		want:    "Licence:   ServerDatacenterEval, Unlicensed (TIMEBASED_EVAL): the evaluation has ended, and Windows shuts this machine down every hour: replace the node with one from a licensed image\n",
	}, {
		licence: host.Licence{Edition: "ServerDatacenterEvalCor", Evaluation: true, Status: host.LicenceNotification, Channel: "TIMEBASED_EVAL"},
		want:    "Licence:   ServerDatacenterEvalCor, Notification (TIMEBASED_EVAL): the evaluation has ended",
	}, {
		licence: host.Licence{Edition: "ServerDatacenter", Status: host.LicenceOOBGrace, Channel: "VOLUME_KMSCLIENT", RemainingMinutes: 2 * 24 * 60},
		want:    "Licence:   ServerDatacenter, OOBGrace (VOLUME_KMSCLIENT), 2 days left: not activated\n",
	}, {
		licence: host.Licence{Edition: "ServerStandard", Status: host.LicenceNotification, Channel: "RETAIL"},
		want:    "Licence:   ServerStandard, Notification (RETAIL): not activated\n",
	}} {
		text, js := runStatus(t, sim.New(sim.Options{Root: t.TempDir(), Licence: tc.licence}))
		if !strings.Contains(text, tc.want) {
			t.Errorf("status lacks %q:\n%s", tc.want, text)
		}
		var got struct{ Licence host.Licence }
		if err := json.Unmarshal(js, &got); err != nil || got.Licence != tc.licence {
			t.Errorf("status -o json: licence %+v (%v), want %+v", got.Licence, err, tc.licence)
		}
	}
}

func TestCommandsNeedWindows(t *testing.T) {
	if _, err := newHost(); err == nil {
		t.Skip("this is Windows")
	}
	var errOut bytes.Buffer
	if code := run(context.Background(), []string{"join"}, nil, io.Discard, &errOut, newHost); code != agent.ExitFailed || !strings.Contains(errOut.String(), "not Windows") {
		t.Errorf("join off Windows: exit %d: %s", code, errOut.String())
	}
}

// TestPauseImage: pause-image prints the image pinned for the host's build
// (what an image bake pre-pulls) and refuses a build no image is pinned
// for.
func TestPauseImage(t *testing.T) {
	for _, p := range render.PauseImages {
		h := sim.New(sim.Options{Root: t.TempDir(), Build: p.Build})
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"pause-image"}, nil, &out, &errOut, func() (host.Host, error) { return h, nil }); code != 0 {
			t.Fatalf("%s: exit %d: %s", p.Release, code, errOut.String())
		}
		if got := strings.TrimSpace(out.String()); got != p.Image {
			t.Errorf("%s: pause-image printed %q, want %q", p.Release, got, p.Image)
		}
	}
	h := sim.New(sim.Options{Root: t.TempDir(), Build: "10.0.14393"})
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"pause-image"}, nil, &out, &errOut, func() (host.Host, error) { return h, nil }); code != agent.ExitFailed || out.Len() != 0 || !strings.Contains(errOut.String(), "no pause image is pinned for Windows build \"10.0.14393\"") {
		t.Errorf("an unknown build: exit %d, out %q, err %q", code, out.String(), errOut.String())
	}
}
