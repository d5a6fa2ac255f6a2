package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
)

// The real Packer runs the image definitions' checks here: Packer v1.9.4,
// pinned by hack/tools/packer, the last release that carries the vSphere and
// Azure builders (plugins 1.x) in its binary. Each directory's packer.pkr.hcl
// asks for Packer 1.10 or later and the plugins 2.x, which are installed by
// packer init from the internet: the validation reads every other file.

// packerSources are the builds of each Packer directory.
var packerSources = map[string][]string{
	"vsphere": {"vsphere-iso.windows", "vsphere-clone.windows"},
	"azure":   {"azure-arm.windows"},
}

// packerVars are the variables a build must be given (those without a
// default), with values of the right shape.
var packerVars = map[string]string{
	"vsphere": `vcenter_server = "vcenter.example.com"
vcenter_username = "packer@vsphere.local"
vcenter_password = "vcenter-password"
datacenter = "dc1"
cluster = "cluster1"
datastore = "datastore1"
network = "VM Network"
admin_password = "Build-Passw0rd"
windows_iso_path = "[iso] windows-server.iso"
base_template = "windows-base"
cloudbase_init_msi_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
`,
	"azure": `subscription_id = "00000000-0000-0000-0000-000000000001"
location = "westeurope"
gallery_resource_group = "capwin-images"
gallery_name = "capwin"
cloudbase_init_msi_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
`,
}

var packerPath = sync.OnceValues(func() (string, error) {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	modfile, err := filepath.Abs(filepath.Join(repoRoot, "hack", "tools", "packer", "go.mod"))
	if err != nil {
		return "", err
	}
	// go tool -n builds the tool into the go command's cache (once) and
	// prints its path.
	out, err := exec.Command(goCmd, "tool", "-modfile="+modfile, "-n", "packer").Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("building Packer from hack/tools/packer: %w\n%s", err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
})

// packer runs the pinned Packer in dir and returns its combined output.
func packer(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	bin, err := packerPath()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// Packer's own state (plugin cache, checkpoint) in the test's
	// directories, and no call home.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "PACKER_CONFIG_DIR="+home, "PACKER_PLUGIN_PATH="+filepath.Join(home, "plugins"),
		"CHECKPOINT_DISABLE=1", "PACKER_NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// packerTree copies images/ into a temporary repository root as Packer
// 1.9.4 can read it (each directory without its packer.pkr.hcl), with a
// stand-in for make bundle's zip and its .sha256 under out/bundle, and
// each directory's required variables in <dir>.pkrvars.hcl at the root.
func packerTree(t *testing.T) string {
	t.Helper()
	root := copyImages(t)
	for dir := range packerSources {
		if err := os.Remove(filepath.Join(root, "images", dir, "packer.pkr.hcl")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir+".pkrvars.hcl"), []byte(packerVars[dir]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bundle := filepath.Join(root, "out", "bundle")
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	zip := []byte("a stand-in for make bundle's zip")
	name := BaseName("v1.36.3") + ".zip"
	sum := sha256.Sum256(zip)
	if err := os.WriteFile(filepath.Join(bundle, name), zip, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, name+".sha256"), []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

// validate runs packer validate on one source of a directory, from the
// repository's root (packer validate images/<dir>, as the README runs it)
// or from inside the directory (packer validate .).
func validate(t *testing.T, root, dir, source string, fromRoot bool, vars ...string) (string, error) {
	t.Helper()
	args := []string{"validate", "-only", source}
	varFile, where, target := filepath.Join(root, dir+".pkrvars.hcl"), root, "images/"+dir
	if !fromRoot {
		varFile, where, target = filepath.Join("..", "..", dir+".pkrvars.hcl"), filepath.Join(root, "images", dir), "."
	}
	args = append(args, "-var-file="+varFile)
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	return packer(t, where, append(args, target)...)
}

// TestPackerValidate: the real Packer accepts every source of both
// definitions, for every Windows release, from the repository's root and
// from the definition's own directory, with the defaults and with the
// options that change what the templates evaluate.
func TestPackerValidate(t *testing.T) {
	root := packerTree(t)
	// A zip elsewhere, without the .sha256 beside it: with bundle_sha256
	// given, none is read.
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, BaseName("v1.36.3")+".zip"), []byte("a zip"), 0o600); err != nil {
		t.Fatal(err)
	}
	variants := [][]string{
		{"windows_release=2019"},
		{"windows_release=2022"},
		{"windows_release=2025"},
		{"hyperv=true", `ntp_servers=["ntp1.example.com","10.0.0.123"]`, "windows_updates=false", "allow_evaluation=true"},
		{"bundle_sha256=" + strings.Repeat("AB", 32), "bundle_dir=" + elsewhere},
	}
	for _, dir := range []string{"vsphere", "azure"} {
		for _, source := range packerSources[dir] {
			for _, vars := range variants {
				for _, fromRoot := range []bool{true, false} {
					out, err := validate(t, root, dir, source, fromRoot, vars...)
					if err != nil || !strings.Contains(out, "The configuration is valid.") {
						t.Errorf("packer validate -only %s %v (from the %s): %v\n%s", source, vars, map[bool]string{true: "repository's root", false: "directory"}[fromRoot], err, out)
					}
				}
			}
		}
	}
}

// TestPackerValidateCanFail breaks a copy of images/ in one way at a time
// and expects the real Packer to refuse it, for the reason given: a check
// that cannot fail proves nothing.
func TestPackerValidateCanFail(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string // under images/
		old, new string
		vars     []string
		fromRoot bool
		want     string
	}{{
		name: "an undeclared variable in a source",
		file: "vsphere/windows.pkr.hcl",
		old:  "CPUs                 = var.cpus",
		new:  "CPUs                 = var.cpu_count",
		want: `"cpu_count"`,
	}, {
		name: "an argument the builder does not have",
		file: "vsphere/windows.pkr.hcl",
		old:  "CPUs                 = var.cpus",
		new:  "cpus                 = var.cpus",
		want: `"cpus"`,
	}, {
		name: "an undeclared local in a provisioner",
		file: "azure/windows.pkr.hcl",
		old:  `"CAPWIN_BUNDLE_SHA256=${local.bundle_sha256}"`,
		new:  `"CAPWIN_BUNDLE_SHA256=${local.bundle_sum}"`,
		want: `"bundle_sum"`,
	}, {
		name: "a function Packer does not have (Terraform's filesha256)",
		file: "azure/variables.pkr.hcl",
		old:  `substr(file("${local.bundle_zip}.sha256"), 0, 64)`,
		new:  `filesha256(local.bundle_zip)`,
		want: `There is no function named "filesha256"`,
	}, {
		name: "a function Packer does not have (Terraform's tostring)",
		file: "azure/windows.pkr.hcl",
		old:  `var.hyperv ? "true" : "false"`,
		new:  `tostring(var.hyperv)`,
		want: `There is no function named "tostring"`,
	}, {
		name:     "a path template functions resolve twice from the repository's root",
		file:     "vsphere/windows.pkr.hcl",
		old:      `templatefile("${local.root}/autounattend.xml.pkrtpl"`,
		new:      `templatefile("${path.root}/autounattend.xml.pkrtpl"`,
		fromRoot: true,
		want:     "images/vsphere/images/vsphere/autounattend.xml.pkrtpl",
	}, {
		name: "a script that does not exist",
		file: "vsphere/windows.pkr.hcl",
		old:  "scripts/configure-openssh.ps1",
		new:  "scripts/configure-ssh.ps1",
		want: "configure-ssh.ps1",
	}, {
		name: "a file in a file provisioner's sources that does not exist",
		file: "azure/windows.pkr.hcl",
		old:  "files/cloudbase-init/azure/cloudbase-init.conf",
		new:  "files/cloudbase-init/azure/cloudbase.conf",
		want: "cloudbase.conf",
	}, {
		name: "a template file that does not exist",
		file: "vsphere/windows.pkr.hcl",
		old:  "autounattend.xml.pkrtpl",
		new:  "unattend.xml.pkrtpl",
		want: "unattend.xml.pkrtpl",
	}, {
		name: "a release no definition knows",
		vars: []string{"windows_release=2016"},
		file: "azure/windows.pkr.hcl",
		want: "The windows_release must be 2019, 2022 or 2025.",
	}, {
		name: "a build account the nodes' SSH logins need",
		vars: []string{"winrm_username=Admin"},
		file: "vsphere/windows.pkr.hcl",
		want: "The winrm_username must not be Admin",
	}, {
		name: "an NTP server list a peer list cannot hold",
		vars: []string{`ntp_servers=["ntp1.example.com,0x8"]`},
		file: "vsphere/windows.pkr.hcl",
		want: "Each of ntp_servers must be a host name or an address",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := packerTree(t)
			if tc.old != "" {
				change(t, root, tc.file, tc.old, tc.new)
			}
			dir := strings.Split(tc.file, "/")[0]
			out, err := validate(t, root, dir, packerSources[dir][0], tc.fromRoot, tc.vars...)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("packer validate: %v; want a failure naming %q:\n%s", err, tc.want, out)
			}
		})
	}
}

// TestPackerFmt: the definitions are formatted as packer fmt writes them.
func TestPackerFmt(t *testing.T) {
	images, err := filepath.Abs(filepath.Join(repoRoot, "images"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := packer(t, images, "fmt", "-check", "-diff", "-recursive", "."); err != nil {
		t.Errorf("packer fmt -check: %v (run packer fmt -recursive images, e.g. go tool -modfile=hack/tools/packer/go.mod packer fmt -recursive images):\n%s", err, out)
	}
	// And fmt -check fails on a file it would change.
	root := copyImages(t)
	change(t, root, "azure/windows.pkr.hcl", "vm_size                   = var.vm_size", "vm_size = var.vm_size")
	if out, err := packer(t, filepath.Join(root, "images"), "fmt", "-check", "-recursive", "."); err == nil {
		t.Errorf("packer fmt -check passed a misaligned file:\n%s", out)
	}
}

// TestPackerBlockAlone: each directory's packer.pkr.hcl, which the
// validation leaves out, holds the packer block and nothing else, and the
// plugin the directory's sources need.
func TestPackerBlockAlone(t *testing.T) {
	plugins := map[string]string{"vsphere": "github.com/vmware/vsphere", "azure": "github.com/hashicorp/azure"}
	for dir, source := range plugins {
		path := filepath.Join(repoRoot, "images", dir, "packer.pkr.hcl")
		f, diags := hclparse.NewParser().ParseHCLFile(path)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", path, diags.Error())
		}
		b := body(f)
		if len(b.Attributes) != 0 || len(b.Blocks) != 1 || b.Blocks[0].Type != "packer" {
			t.Errorf("%s must hold one packer block and nothing else: the validation leaves it out", path)
			continue
		}
		if !strings.Contains(string(f.Bytes), `source  = "`+source+`"`) || !strings.Contains(string(f.Bytes), `version = ">= 2.0.0"`) {
			t.Errorf("%s does not require %s >= 2.0.0", path, source)
		}
	}
	entries, err := os.ReadDir(filepath.Join(repoRoot, "images"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := packerSources[e.Name()]; e.IsDir() && !ok && e.Name() != "scripts" && e.Name() != "files" {
			t.Errorf("images/%s is a directory the Packer tests do not validate", e.Name())
		}
	}
}
