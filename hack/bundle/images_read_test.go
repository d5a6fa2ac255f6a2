package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// How images_scripts_test.go reads the image definitions: the scripts'
// commands (hack/ps-syntax --commands), the templates' provisioners, and
// cloudbase-init's configuration files.

// psCommand is a command or method call of a script (hack/ps-syntax/check.mjs).
type psCommand struct {
	Name string `json:"name"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func (c psCommand) String() string { return fmt.Sprintf("line %d: %s", c.Line, c.Text) }

// script lists the commands of images/scripts/<name> under root, in the
// order PowerShell starts them.
func script(t *testing.T, root, name string) []psCommand {
	t.Helper()
	if os.Getenv("CAPWIN_SKIP_PS_SYNTAX") != "" {
		t.Skip("CAPWIN_SKIP_PS_SYNTAX is set: WHAT THE IMAGE SCRIPTS DO IS NOT CHECKED")
	}
	path := filepath.Join(root, "images", "scripts", name)
	out, err := exec.Command(filepath.Join(repoRoot, "hack", "ps-syntax", "run.sh"), "--commands", path).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("listing the commands of %s: %v\n%s%s", path, err, out, stderr)
	}
	var r struct {
		Commands []psCommand `json:"commands"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return r.Commands
}

// scriptText is images/scripts/<name> under root.
func scriptText(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "images", "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// lacks reports each text the script does not hold.
func lacks(t *testing.T, root, name string, texts ...string) []string {
	t.Helper()
	data := scriptText(t, root, name)
	var problems []string
	for _, want := range texts {
		if !strings.Contains(data, want) {
			problems = append(problems, fmt.Sprintf("%s lacks %q", name, want))
		}
	}
	return problems
}

// step matches a command by name (or, with a leading "*", by a name ending
// so: "*Sysprep.exe" for `& (Join-Path ... 'Sysprep.exe')`) and by words its
// text must hold.
type step struct {
	name string
	has  []string
}

func (s step) matches(c psCommand) bool {
	if strings.HasPrefix(s.name, "*") {
		if !strings.HasSuffix(strings.Trim(c.Name, "()'\" "), s.name[1:]) {
			return false
		}
	} else if !strings.EqualFold(c.Name, s.name) {
		return false
	}
	for _, h := range s.has {
		if !strings.Contains(c.Text, h) {
			return false
		}
	}
	return true
}

func (s step) String() string { return strings.TrimSpace(s.name + " " + strings.Join(s.has, " ")) }

// inOrder reports the first step not found after the one before it.
func inOrder(script string, cmds []psCommand, steps ...step) []string {
	at := 0
	for i, s := range steps {
		j := slices.IndexFunc(cmds[at:], s.matches)
		if j < 0 {
			if i == 0 {
				return []string{fmt.Sprintf("%s does not run %s", script, s)}
			}
			return []string{fmt.Sprintf("%s does not run %s after %s", script, s, steps[i-1])}
		}
		at += j + 1
	}
	return nil
}

// provisioner is one provisioner of a template's build, as far as the
// checks care.
type provisioner struct {
	kind, script, mode string
	elevated, timeout  bool
	// env is environment_vars' source text; uploads are the base names a
	// file provisioner writes.
	env     string
	uploads []string
}

func (p provisioner) String() string {
	if p.script != "" {
		return p.kind + " " + p.script + " " + p.mode
	}
	return p.kind
}

// template parses images/<platform>/<name> under root.
func template(t *testing.T, root, platform, name string) *hcl.File {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCLFile(filepath.Join(root, "images", platform, name))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return f
}

// provisioners reads images/<platform>/windows.pkr.hcl's provisioners in
// order.
func provisioners(t *testing.T, root, platform string) []provisioner {
	t.Helper()
	f := template(t, root, platform, "windows.pkr.hcl")
	var out []provisioner
	for _, b := range body(f).Blocks {
		if b.Type != "build" {
			continue
		}
		for _, p := range b.Body.Blocks {
			if p.Type != "provisioner" || len(p.Labels) != 1 {
				continue
			}
			step := provisioner{kind: p.Labels[0]}
			text := func(name string) string {
				a, ok := p.Body.Attributes[name]
				if !ok {
					return ""
				}
				r := a.Expr.Range()
				return string(r.SliceBytes(f.Bytes))
			}
			if s := text("script"); s != "" {
				step.script = filepath.Base(strings.Trim(s, `"`))
			}
			step.env = text("environment_vars")
			for _, mode := range []string{"install", "verify"} {
				if strings.Contains(step.env, "CAPWIN_WINDOWS_UPDATE_MODE="+mode) {
					step.mode = mode
				}
			}
			_, step.elevated = p.Body.Attributes["elevated_user"]
			_, step.timeout = p.Body.Attributes["timeout"]
			if step.kind == "file" {
				for _, m := range regexp.MustCompile(`"[^"]*/([^"/]+)"`).FindAllStringSubmatch(text("sources")+text("source"), -1) {
					step.uploads = append(step.uploads, m[1])
				}
				if dest := strings.Trim(text("destination"), `"`); !strings.HasSuffix(dest, "/") {
					step.uploads = append(step.uploads, filepath.Base(dest))
				}
			}
			out = append(out, step)
		}
	}
	return out
}

// cloudbaseInitConf reads images/files/cloudbase-init/<platform>/<name>
// under root as cloudbase-init does ([DEFAULT] key=value, # comments).
func cloudbaseInitConf(t *testing.T, root, platform, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "images", "files", "cloudbase-init", platform, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	conf := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s/%s: %q is not key=value", platform, name, line)
		}
		if _, dup := conf[k]; dup {
			t.Errorf("%s/%s sets %s twice", platform, name, k)
		}
		conf[k] = v
	}
	return conf
}
