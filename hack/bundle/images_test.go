package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/render"
)

// repoRoot is the repository this module is in.
var repoRoot = filepath.Join("..", "..")

// TestImages checks what the real packer validate (packer_test.go) does not
// of the image definitions in images/: every script and file under images/
// is used by a template; a variable both directories declare has the same
// type, default and validation in each; and the Windows releases are the
// node agent's pause image table.
func TestImages(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range check(root) {
		t.Error(p)
	}
}

// TestImagesChecksCanFail breaks a copy of images/ in one way at a time and
// expects check to say so: a check that cannot fail proves nothing.
func TestImagesChecksCanFail(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // under images/
		old  string
		new  string
		want string
	}{{
		name: "a file that does not parse",
		file: "vsphere/windows.pkr.hcl",
		old:  "build {",
		new:  "build {{",
		want: "does not parse",
	}, {
		name: "a script no template uses",
		file: "vsphere/windows.pkr.hcl",
		old:  "provisioner \"powershell\" {\n    script = \"${local.root}/../scripts/prepull-pause-image.ps1\"\n  }",
		new:  "",
		want: "", // the Azure template still uses it: see the next case
	}, {
		name: "a script neither template uses",
		file: "azure/windows.pkr.hcl",
		old:  "provisioner \"powershell\" {\n    script = \"${local.root}/../scripts/sysprep-azure.ps1\"\n  }",
		new:  "",
		want: "images/scripts/sysprep-azure.ps1 is used by no template",
	}, {
		name: "a release the validation refuses",
		file: "vsphere/variables.pkr.hcl",
		old:  "contains([\"2019\", \"2022\", \"2025\"], var.windows_release)",
		new:  "contains([\"2019\", \"2022\"], var.windows_release)",
		want: "windows_release accepts [2019 2022], but windows_releases has [2019 2022 2025]",
	}, {
		name: "a build the agent pins no pause image for",
		file: "azure/variables.pkr.hcl",
		old:  "build             = \"10.0.20348\"",
		new:  "build             = \"10.0.20349\"",
		want: "the node agent pins pause images for",
	}, {
		name: "a release the agent does not know",
		file: "vsphere/variables.pkr.hcl",
		old:  "contains([\"2019\", \"2022\", \"2025\"], var.windows_release)",
		new:  "contains([\"2016\", \"2019\", \"2022\", \"2025\"], var.windows_release)",
		want: "windows_release accepts [2016 2019 2022 2025]",
	}, {
		name: "a shared variable declared differently",
		file: "azure/variables.pkr.hcl",
		old:  "contains([\"2019\", \"2022\", \"2025\"], var.windows_release)",
		new:  "contains([\"2022\", \"2025\", \"2019\"], var.windows_release)",
		want: "variable \"windows_release\" is declared differently in images/azure and images/vsphere",
	}, {
		name: "a shared variable whose default differs",
		file: "vsphere/variables.pkr.hcl",
		old:  "default     = \"1.1.8\"",
		new:  "default     = \"1.1.9\"",
		want: "variable \"cloudbase_init_version\" is declared differently",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyImages(t)
			change(t, root, tc.file, tc.old, tc.new)
			problems := check(root)
			if tc.want == "" {
				if len(problems) != 0 {
					t.Fatalf("expected no problem, got:\n%s", strings.Join(problems, "\n"))
				}
				return
			}
			for _, p := range problems {
				if strings.Contains(p, tc.want) {
					return
				}
			}
			t.Fatalf("expected a problem containing %q, got:\n%s", tc.want, strings.Join(problems, "\n"))
		})
	}
}

// TestImagesPowerShellSyntax parses the images' PowerShell scripts with the
// repository's check (hack/ps-syntax, the tree-sitter grammar under node),
// and a broken copy to prove the check fails. It fails, loudly, where node
// and npm are missing: set CAPWIN_SKIP_PS_SYNTAX=1 to skip it knowingly.
func TestImagesPowerShellSyntax(t *testing.T) {
	if os.Getenv("CAPWIN_SKIP_PS_SYNTAX") != "" {
		t.Skip("CAPWIN_SKIP_PS_SYNTAX is set: THE POWERSHELL SYNTAX OF THE IMAGE SCRIPTS IS NOT CHECKED")
	}
	var scripts []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "images"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".ps1") {
			scripts = append(scripts, p)
		}
		return err
	})
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no PowerShell scripts under images/: %v", err)
	}
	run := filepath.Join(repoRoot, "hack", "ps-syntax", "run.sh")
	out, err := exec.Command(run, scripts...).CombinedOutput()
	if err != nil {
		t.Fatalf("PowerShell syntax check failed (%v):\n%s", err, out)
	}

	data, err := os.ReadFile(filepath.Join(repoRoot, "images", "scripts", "prepull-pause-image.ps1"))
	if err != nil {
		t.Fatal(err)
	}
	const good = "if ($names -notcontains $image) {"
	if !strings.Contains(string(data), good) {
		t.Fatalf("prepull-pause-image.ps1 no longer contains %q: update this test", good)
	}
	broken := filepath.Join(t.TempDir(), "broken.ps1")
	if err := os.WriteFile(broken, []byte(strings.Replace(string(data), good, "if ($names -notcontains $image {", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(run, broken).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "syntax error") {
		t.Fatalf("the syntax check passed a broken script (%v):\n%s", err, out)
	}
}

// change replaces, in turn, each old text of images/<file> under root by
// the new one after it: a copy broken in the way a check looks for.
func change(t *testing.T, root, file string, oldNew ...string) {
	t.Helper()
	path := filepath.Join(root, "images", filepath.FromSlash(file))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(text, oldNew[i]) {
			t.Fatalf("%s no longer contains %q: update this case", file, oldNew[i])
		}
		text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// copyImages copies images/ into a temporary repository root.
func copyImages(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(repoRoot, "images")
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, "images", rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPauseImageTableInDocs: docs/images.md's table of pause images is the
// node agent's (render.PauseImages), row for row.
func TestPauseImageTableInDocs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "images.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| ltsc") {
			rows = append(rows, line)
		}
	}
	var want []string
	for _, p := range render.PauseImages {
		want = append(want, "| "+p.Release+" | "+p.Build+" | `"+p.Image+"` |")
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/images.md's pause image table:\n%s\nthe node agent pins:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
