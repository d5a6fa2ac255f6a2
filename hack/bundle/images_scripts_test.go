package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// What the image scripts do, and in which order, read from their syntax
// trees (hack/ps-syntax --commands): nothing Windows runs here, so this is
// as close to running them as the repository gets. Each check is a function
// of the commands, also run on a copy broken in the way it looks for.

// psCommand is a command or method call of a script (hack/ps-syntax/check.mjs).
type psCommand struct {
	Name string `json:"name"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func (c psCommand) String() string { return fmt.Sprintf("line %d: %s", c.Line, c.Text) }

// psCommands lists a script's commands, in the order PowerShell starts them.
func psCommands(t *testing.T, path string) []psCommand {
	t.Helper()
	if os.Getenv("CAPWIN_SKIP_PS_SYNTAX") != "" {
		t.Skip("CAPWIN_SKIP_PS_SYNTAX is set: WHAT THE IMAGE SCRIPTS DO IS NOT CHECKED")
	}
	out, err := exec.Command(filepath.Join(repoRoot, "hack", "ps-syntax", "run.sh"), "--commands", path).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
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

// script returns the commands of images/scripts/<name>.
func script(t *testing.T, name string) []psCommand {
	t.Helper()
	return psCommands(t, filepath.Join(repoRoot, "images", "scripts", name))
}

// changed returns the commands of a copy of images/scripts/<name> with, in
// turn, each old text replaced by the new one after it.
func changed(t *testing.T, name string, oldNew ...string) []psCommand {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "images", "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(text, oldNew[i]) {
			t.Fatalf("%s no longer contains %q: update this test", name, oldNew[i])
		}
		text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return psCommands(t, path)
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
		if !strings.HasSuffix(strings.Trim(c.Name, "()'\" "), s.name[1:]) && !strings.Contains(c.Name, s.name[1:]) {
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

// accountChanges are the commands that disable, rename or remove a local
// account, or set one's password.
func accountChanges(cmds []psCommand) []psCommand {
	var out []psCommand
	for _, c := range cmds {
		switch {
		case slices.Contains([]string{"disable-localuser", "rename-localuser", "remove-localuser", "set-localuser"}, strings.ToLower(c.Name)),
			(strings.EqualFold(c.Name, "net") || strings.EqualFold(c.Name, "net.exe")) && strings.Contains(strings.ToLower(c.Text), " user "):
			out = append(out, c)
		}
	}
	return out
}

// sysprepProblems: sysprep-azure.ps1 leaves every local account as it is
// (on Azure the session's own user is the built-in Administrator, and each
// WinRM request after the script would log in as it), and runs the
// azure-arm builder's sequence: cloudbase-init's answer file there, the
// guest agent running, passwords that do not expire, no stale answer file,
// sysprep, and a wait for the generalized state.
func sysprepProblems(cmds []psCommand) []string {
	var problems []string
	for _, c := range accountChanges(cmds) {
		problems = append(problems, fmt.Sprintf("sysprep-azure.ps1 changes a local account (%s): on Azure the build's own session is the built-in Administrator's", c))
	}
	return append(problems, inOrder("sysprep-azure.ps1", cmds,
		step{"Test-Path", []string{"$unattend"}},
		step{"Get-Service", []string{"RdAgent", "WindowsAzureGuestAgent"}},
		step{"net.exe", []string{"accounts", "/maxpwage:unlimited"}},
		step{"Remove-Item", []string{`Sysprep\unattend.xml`}},
		step{"*Sysprep.exe", []string{"/generalize", "/quit", "/mode:vm", "/unattend:"}},
		step{"Get-ItemProperty", []string{`CurrentVersion\Setup\State`}},
	)...)
}

func TestSysprepKeepsTheSessionsAccount(t *testing.T) {
	for _, p := range sysprepProblems(script(t, "sysprep-azure.ps1")) {
		t.Error(p)
	}
	// Broken in the two ways that matter.
	disabled := changed(t, "sysprep-azure.ps1", "# An answer file left here", "Get-LocalUser | Where-Object { $_.SID.Value -like 'S-1-5-21-*-500' } | Disable-LocalUser\n# An answer file left here")
	if p := sysprepProblems(disabled); len(p) == 0 || !strings.Contains(p[0], "changes a local account") {
		t.Errorf("a sysprep script that disables the built-in Administrator passed: %v", p)
	}
	const stale = "Remove-Item -Path (Join-Path $env:SystemRoot 'System32\\Sysprep\\unattend.xml') -Force -ErrorAction SilentlyContinue\n"
	const sysprep = "while ($true) {"
	late := changed(t, "sysprep-azure.ps1", stale, "", sysprep, stale+sysprep)
	if p := sysprepProblems(late); len(p) == 0 || !strings.Contains(p[0], "Sysprep.exe") {
		t.Errorf("a sysprep script that removes the stale answer file after sysprep passed: %v", p)
	}
}

// specializeProblems: capwin-specialize.ps1 disables the account whose SID
// ends in 500, whatever its name, and the build's account that
// finalize-image.ps1 recorded.
func specializeProblems(cmds []psCommand) []string {
	return inOrder("capwin-specialize.ps1", cmds,
		step{"Get-LocalUser", nil},
		step{"Where-Object", []string{"S-1-5-21-*-500"}},
		step{"Get-ItemProperty", []string{`'HKLM:\SOFTWARE\capwin\image'`, "'BuildAccount'"}},
		step{"Get-LocalUser", []string{"$recorded.BuildAccount"}},
		step{"Disable-LocalUser", nil},
	)
}

// TestSpecializeDisablesTheBuiltinAdministrator: the built-in
// Administrator, which the build logged in as, is disabled on each machine
// in the specialize pass, before its first full boot: cloudbase-init's
// unattend run on both platforms runs the local scripts of the directory
// finalize-image.ps1 puts capwin-specialize.ps1 in, and no other script
// touches the account.
func TestSpecializeDisablesTheBuiltinAdministrator(t *testing.T) {
	for _, p := range specializeProblems(script(t, "capwin-specialize.ps1")) {
		t.Error(p)
	}
	if p := specializeProblems(changed(t, "capwin-specialize.ps1", "$account | Disable-LocalUser", "$account | Out-Null")); len(p) == 0 {
		t.Error("a specialize script that disables nothing passed")
	}
	const dir = `C:\Windows\Setup\Scripts\specialize\`
	for _, platform := range []string{"vsphere", "azure"} {
		conf := cloudbaseInitConf(t, platform, "cloudbase-init-unattend.conf")
		if !slices.Contains(strings.Split(conf["plugins"], ","), "cloudbaseinit.plugins.common.localscripts.LocalScriptsPlugin") {
			t.Errorf("%s's cloudbase-init-unattend.conf does not run LocalScriptsPlugin: %s", platform, conf["plugins"])
		}
		if conf["local_scripts_path"] != dir {
			t.Errorf("%s's cloudbase-init-unattend.conf runs the local scripts of %q, not %q", platform, conf["local_scripts_path"], dir)
		}
	}
	// %SystemRoot% is C:\Windows on every image (the answer file and the
	// Marketplace images install there).
	for _, p := range inOrder("finalize-image.ps1", script(t, "finalize-image.ps1"),
		step{"Join-Path", []string{"$env:SystemRoot", `'Setup\Scripts'`}},
		step{"Join-Path", []string{"$scripts", "'specialize'"}},
		step{"Copy-Item", []string{"capwin-specialize.ps1", "$specialize"}},
		step{"Set-ItemProperty", []string{"$record", "'BuildAccount'", "$env:CAPWIN_BUILD_ACCOUNT"}},
	) {
		t.Error(p)
	}
	// The specialize pass's failure is only in cloudbase-init's log, and it
	// does not run without metadata: the first boot runs the script again
	// and logs what it says.
	for _, p := range inOrder("capwin-first-boot.ps1", script(t, "capwin-first-boot.ps1"),
		step{"*capwin-specialize.ps1", nil},
		step{"Write-Log", []string{"capwin-specialize"}},
	) {
		t.Error(p)
	}
	// Each template records the account it logs in as.
	for platform, account := range map[string]string{"vsphere": `"CAPWIN_BUILD_ACCOUNT=${var.winrm_username}"`, "azure": `"CAPWIN_BUILD_ACCOUNT=packer"`} {
		finalize := slices.IndexFunc(provisioners(t, platform), func(p provisioner) bool { return p.script == "finalize-image.ps1" })
		if finalize < 0 || !strings.Contains(provisioners(t, platform)[finalize].env, account) {
			t.Errorf("images/%s does not give finalize-image.ps1 %s, the account its source logs in as", platform, account)
		}
	}
	for _, name := range []string{"capwin-first-boot.ps1", "finalize-image.ps1", "prepare-windows.ps1", "configure-time.ps1"} {
		for _, c := range accountChanges(script(t, name)) {
			t.Errorf("%s changes a local account (%s): capwin-specialize.ps1 alone does", name, c)
		}
	}
}

// TestWindowsUpdateAtBuildOnly: each template turns automatic updates off
// first, then runs Windows Update five times, elevated and with a time
// limit, with a restart after each, then checks; and sets the clock after
// that, before the image is finalized (and, on Azure, generalized last).
func TestWindowsUpdateAtBuildOnly(t *testing.T) {
	for _, platform := range []string{"vsphere", "azure"} {
		for _, p := range buildOrderProblems(provisioners(t, platform), platform) {
			t.Error(p)
		}
	}
	// A template that skips the restart after the second pass.
	steps := provisioners(t, "azure")
	i := slices.IndexFunc(steps, func(p provisioner) bool { return p.mode == "install" })
	j := i + 1 + slices.IndexFunc(steps[i+1:], func(p provisioner) bool { return p.mode == "install" })
	broken := slices.Delete(slices.Clone(steps), j+1, j+2)
	if p := buildOrderProblems(broken, "azure"); len(p) == 0 {
		t.Errorf("a template without a restart after its second Windows Update pass passed")
	}

	cmds := script(t, "install-windows-updates.ps1")
	for _, p := range inOrder("install-windows-updates.ps1", cmds,
		// install: search, skip what may ask for input, accept, download,
		// install, each retried.
		step{"Search-Updates", []string{"$session"}},
		step{"continue", nil},
		step{".AcceptEula", nil},
		step{"Retry", []string{"$downloader.Download()"}},
		step{"Retry", []string{"$installer.Install()"}},
		// verify: the revision, no restart pending, nothing pending but
		// Defender's definitions.
		step{"Get-ItemProperty", []string{`Windows NT\CurrentVersion`}},
		step{"throw", []string{"older than"}},
		step{"Test-RestartPending", nil},
		step{"throw", []string{"waits for a restart"}},
		step{"Search-Updates", []string{"$session"}},
		step{"throw", []string{"still not installed"}},
	) {
		t.Error(p)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "images", "scripts", "install-windows-updates.ps1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`$criteria = "IsInstalled=0 and IsHidden=0 and BrowseOnly=0 and Type='Software'"`,
		`if ($update.InstallationBehavior.CanRequestUserInput) {`,
		`$definitions = 'E0789628-CE08-4437-BE74-2495B842F43B'`,
		`@($_.Categories | Where-Object { $_.CategoryID -eq $definitions }).Count -eq 0`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("install-windows-updates.ps1 lacks %q", want)
		}
	}
	for _, p := range inOrder("prepare-windows.ps1", script(t, "prepare-windows.ps1"),
		step{"Set-ItemProperty", []string{`$au`, "'NoAutoUpdate'", "-Value 1"}},
		step{"Install-WindowsFeature", nil},
	) {
		t.Error(p)
	}
}

// provisioner is one provisioner of a template's build, as far as the
// order checks care.
type provisioner struct {
	kind, script, mode string
	elevated, timeout  bool
	env                string
}

func (p provisioner) String() string {
	if p.script != "" {
		return p.kind + " " + p.script + " " + p.mode
	}
	return p.kind
}

// provisioners reads images/<platform>/windows.pkr.hcl's provisioners in
// order.
func provisioners(t *testing.T, platform string) []provisioner {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCLFile(filepath.Join(repoRoot, "images", platform, "windows.pkr.hcl"))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
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
			step.script = filepath.Base(strings.Trim(text("script"), `"`))
			if step.script == "." {
				step.script = ""
			}
			step.env = text("environment_vars")
			for _, mode := range []string{"install", "verify"} {
				if strings.Contains(step.env, "CAPWIN_WINDOWS_UPDATE_MODE="+mode) {
					step.mode = mode
				}
			}
			_, step.elevated = p.Body.Attributes["elevated_user"]
			_, step.timeout = p.Body.Attributes["timeout"]
			out = append(out, step)
		}
	}
	return out
}

func buildOrderProblems(steps []provisioner, platform string) []string {
	var problems []string
	var names []string
	for _, s := range steps {
		names = append(names, s.String())
	}
	seq := strings.Join(names, "\n")
	want := []string{"powershell prepare-windows.ps1 ", "windows-restart"}
	for range 5 {
		want = append(want, "powershell install-windows-updates.ps1 install", "windows-restart")
	}
	want = append(want, "powershell install-windows-updates.ps1 verify")
	if !strings.HasPrefix(seq, strings.Join(want, "\n")) {
		problems = append(problems, fmt.Sprintf("images/%s's build does not start with the release check, its restart and five Windows Update passes each followed by a restart, then the check:\n%s", platform, seq))
	}
	for _, s := range steps {
		if s.script == "install-windows-updates.ps1" && (!s.elevated || !s.timeout) {
			problems = append(problems, fmt.Sprintf("images/%s runs %s %s without elevated_user (the Windows Update Agent does not install for a remote session) or without a timeout (an update waiting for input hangs it)", platform, s.script, s.mode))
		}
		if s.script == "prepare-windows.ps1" && !strings.Contains(s.env, `"CAPWIN_ALLOW_EVALUATION=${var.allow_evaluation}"`) {
			problems = append(problems, fmt.Sprintf("images/%s does not tell prepare-windows.ps1 allow_evaluation", platform))
		}
	}
	last := steps[len(steps)-1].script
	wantLast := map[string]string{"vsphere": "finalize-image.ps1", "azure": "sysprep-azure.ps1"}[platform]
	if last != wantLast {
		problems = append(problems, fmt.Sprintf("images/%s's build ends with %s, not %s", platform, last, wantLast))
	}
	configure := slices.IndexFunc(steps, func(p provisioner) bool { return p.script == "configure-time.ps1" })
	finalize := slices.IndexFunc(steps, func(p provisioner) bool { return p.script == "finalize-image.ps1" })
	verify := slices.IndexFunc(steps, func(p provisioner) bool { return p.mode == "verify" })
	if configure < verify || configure > finalize {
		problems = append(problems, fmt.Sprintf("images/%s runs configure-time.ps1 at %d, not between the last Windows Update pass (%d) and finalize-image.ps1 (%d)", platform, configure, verify, finalize))
	}
	return problems
}

// cloudbaseInitConf reads images/files/cloudbase-init/<platform>/<name> as
// cloudbase-init does ([DEFAULT] key=value, # comments).
func cloudbaseInitConf(t *testing.T, platform, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "images", "files", "cloudbase-init", platform, name))
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

// TestTimeSource: on vSphere cloudbase-init sets the clock's source at
// each machine's first boot (NTPClientPlugin: the service automatic, the
// DHCP server's NTP servers unless the image names some, the real-time
// clock UTC as configure-time.ps1 sets it, so that the plugin does not
// restart the machine to change it); on Azure the image leaves the
// Hyper-V host's clock in charge and the real-time clock as Azure has it.
func TestTimeSource(t *testing.T) {
	vsphere := cloudbaseInitConf(t, "vsphere", "cloudbase-init.conf.pkrtpl")
	if !strings.HasPrefix(vsphere["plugins"], "cloudbaseinit.plugins.windows.ntpclient.NTPClientPlugin,") {
		t.Errorf("vSphere's cloudbase-init.conf does not run NTPClientPlugin: %s", vsphere["plugins"])
	}
	for k, v := range map[string]string{"ntp_enable_service": "true", "ntp_use_dhcp_config": "${ntp_use_dhcp_config}", "real_time_clock_utc": "true"} {
		if vsphere[k] != v {
			t.Errorf("vSphere's cloudbase-init.conf sets %s=%q, want %q", k, vsphere[k], v)
		}
	}
	azure := cloudbaseInitConf(t, "azure", "cloudbase-init.conf")
	if strings.Contains(azure["plugins"], "NTPClientPlugin") {
		t.Errorf("Azure's cloudbase-init.conf runs NTPClientPlugin, which would set the real-time clock (real_time_clock_utc=%q) and restart the machine", azure["real_time_clock_utc"])
	}
	cmds := script(t, "configure-time.ps1")
	for _, p := range inOrder("configure-time.ps1", cmds,
		step{"Set-Service", []string{"w32time", "Automatic"}},
		step{"Set-ItemProperty", []string{"'NtpServer'", "$peers"}},
		step{"Set-ItemProperty", []string{"TimeZoneInformation", "'RealTimeIsUniversal'", "-Value 1"}},
	) {
		t.Error(p)
	}
	// The real-time clock is set on vSphere only.
	data, err := os.ReadFile(filepath.Join(repoRoot, "images", "scripts", "configure-time.ps1"))
	if err != nil {
		t.Fatal(err)
	}
	rtc := strings.Index(string(data), "'RealTimeIsUniversal'")
	branch := strings.LastIndex(string(data[:rtc]), "if ($platform -eq ")
	if branch < 0 || !strings.HasPrefix(string(data[branch:]), "if ($platform -eq 'vsphere')") {
		t.Errorf("configure-time.ps1 sets RealTimeIsUniversal outside its vSphere branch")
	}
	// The template renders ntp_use_dhcp_config from ntp_servers.
	for _, p := range provisionerBodies(t, "vsphere", "file") {
		if strings.Contains(p, "cloudbase-init.conf.pkrtpl") && !strings.Contains(p, "ntp_use_dhcp_config = length(var.ntp_servers) == 0") {
			t.Errorf("images/vsphere renders cloudbase-init.conf.pkrtpl without ntp_use_dhcp_config = length(var.ntp_servers) == 0:\n%s", p)
		}
	}
}

// provisionerBodies returns the source text of a template's provisioners
// of a kind.
func provisionerBodies(t *testing.T, platform, kind string) []string {
	t.Helper()
	path := filepath.Join(repoRoot, "images", platform, "windows.pkr.hcl")
	f, diags := hclparse.NewParser().ParseHCLFile(path)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var out []string
	_ = hclsyntax.VisitAll(body(f), func(n hclsyntax.Node) hcl.Diagnostics {
		if b, ok := n.(*hclsyntax.Block); ok && b.Type == "provisioner" && len(b.Labels) == 1 && b.Labels[0] == kind {
			r := b.Range()
			out = append(out, string(r.SliceBytes(f.Bytes)))
		}
		return nil
	})
	return out
}

// TestEvaluationRefused: prepare-windows.ps1, the build's first step,
// refuses an evaluation edition, before it installs anything, unless
// allow_evaluation says the image is for a lab.
func TestEvaluationRefused(t *testing.T) {
	problems := func(cmds []psCommand) []string {
		return inOrder("prepare-windows.ps1", cmds,
			step{"Get-ItemProperty", []string{`Windows NT\CurrentVersion`}},
			step{"throw", []string{"evaluation edition", "allow_evaluation"}},
			step{"Install-WindowsFeature", nil},
		)
	}
	for _, p := range problems(script(t, "prepare-windows.ps1")) {
		t.Error(p)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "images", "scripts", "prepare-windows.ps1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$edition = $version.EditionID", "if ($edition -like '*Eval*') {", "if ($env:CAPWIN_ALLOW_EVALUATION -ne 'true') {"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("prepare-windows.ps1 lacks %q", want)
		}
	}
	if p := problems(changed(t, "prepare-windows.ps1", "        throw ('this machine runs the evaluation edition", "        Write-Output ('this machine runs the evaluation edition")); len(p) == 0 {
		t.Error("a prepare-windows.ps1 that accepts evaluation editions passed")
	}
}
