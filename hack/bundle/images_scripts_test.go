package main

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// What the image scripts do, and in which order, read from their syntax
// trees (hack/ps-syntax --commands), with the templates' provisioners and
// cloudbase-init's configuration: nothing Windows runs here, so this is as
// close to running them as the repository gets. Each check is a function of
// a repository root, run on this repository (TestImageScripts) and on
// copies broken in the way it looks for (TestImageScriptChecksCanFail).

// imageChecks are the checks, by name.
var imageChecks = map[string]func(t *testing.T, root string) []string{
	"sysprep":     sysprepProblems,
	"specialize":  specializeProblems,
	"build order": buildOrderProblems,
	"updates":     updateProblems,
	"time":        timeProblems,
	"evaluation":  evaluationProblems,
	"uploads":     uploadProblems,
	"environment": environmentProblems,
}

func TestImageScripts(t *testing.T) {
	names := make([]string, 0, len(imageChecks))
	for name := range imageChecks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, p := range imageChecks[name](t, repoRoot) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// TestImageScriptChecksCanFail breaks a copy of images/ in one way at a
// time; the check named must say so.
func TestImageScriptChecksCanFail(t *testing.T) {
	for _, tc := range []struct {
		name, check string
		file        string // under images/
		oldNew      []string
		want        string
	}{{
		name: "sysprep disables the session's account", check: "sysprep", file: "scripts/sysprep-azure.ps1",
		oldNew: []string{"# An answer file left here", "Get-LocalUser | Where-Object { $_.SID.Value -like 'S-1-5-21-*-500' } | Disable-LocalUser\n# An answer file left here"},
		want:   "changes a local account",
	}, {
		name: "the stale answer file removed after sysprep", check: "sysprep", file: "scripts/sysprep-azure.ps1",
		oldNew: []string{
			"Remove-Item -Path (Join-Path $env:SystemRoot 'System32\\Sysprep\\unattend.xml') -Force -ErrorAction SilentlyContinue\n", "",
			"# Sysprep takes minutes", "Remove-Item -Path (Join-Path $env:SystemRoot 'System32\\Sysprep\\unattend.xml') -Force -ErrorAction SilentlyContinue\n# Sysprep takes minutes",
		},
		want: "Sysprep.exe",
	}, {
		name: "the specialize script disables nothing", check: "specialize", file: "scripts/capwin-specialize.ps1",
		oldNew: []string{"$account | Disable-LocalUser", "$account | Out-Null"},
		want:   "Disable-LocalUser",
	}, {
		name: "the unattend run has no local scripts", check: "specialize", file: "files/cloudbase-init/vsphere/cloudbase-init-unattend.conf",
		oldNew: []string{",cloudbaseinit.plugins.common.localscripts.LocalScriptsPlugin", ""},
		want:   "does not run LocalScriptsPlugin",
	}, {
		name: "the first boot does not check the accounts", check: "specialize", file: "scripts/capwin-first-boot.ps1",
		oldNew: []string{"& (Join-Path $PSScriptRoot 'specialize\\capwin-specialize.ps1')", "& (Join-Path $PSScriptRoot 'specialize\\other.ps1')"},
		want:   "capwin-specialize.ps1",
	}, {
		name: "no restart after the second update pass", check: "build order", file: "azure/windows.pkr.hcl",
		oldNew: []string{"  provisioner \"windows-restart\" {\n    restart_timeout = \"1h\"\n  }\n\n  provisioner \"powershell\" {\n    environment_vars  = concat(local.windows_update_environment, [\"CAPWIN_WINDOWS_UPDATE_MODE=install\"])", "  provisioner \"powershell\" {\n    environment_vars  = concat(local.windows_update_environment, [\"CAPWIN_WINDOWS_UPDATE_MODE=install\"])"},
		want:   "five Windows Update passes",
	}, {
		name: "an update pass without a time limit", check: "build order", file: "vsphere/windows.pkr.hcl",
		oldNew: []string{"    timeout           = \"2h\"\n", ""},
		want:   "without a timeout",
	}, {
		name: "the policy under the agent's key, not the policies'", check: "updates", file: "scripts/prepare-windows.ps1",
		oldNew: []string{`$au = 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU'`, `$au = 'HKLM:\SOFTWARE\Microsoft\Windows\WindowsUpdate\AU'`},
		want:   "Policies",
	}, {
		name: "the policy as a string", check: "updates", file: "scripts/prepare-windows.ps1",
		oldNew: []string{"-Name 'NoAutoUpdate' -Value 1 -Type DWord", "-Name 'NoAutoUpdate' -Value 1 -Type String"},
		want:   "NoAutoUpdate",
	}, {
		name: "the minimum revision check the wrong way round", check: "updates", file: "scripts/install-windows-updates.ps1",
		oldNew: []string{"if ($revision -lt $minimum) {", "if ($revision -gt $minimum) {"},
		want:   "$revision -lt $minimum",
	}, {
		name: "optional updates installed", check: "updates", file: "scripts/install-windows-updates.ps1",
		oldNew: []string{" and BrowseOnly=0", ""},
		want:   "BrowseOnly=0",
	}, {
		name: "a pending restart not checked", check: "updates", file: "scripts/install-windows-updates.ps1",
		oldNew: []string{"if (Test-RestartPending) {", "if ($false) {"},
		want:   "Test-RestartPending",
	}, {
		name: "the real-time clock local time to cloudbase-init", check: "time", file: "files/cloudbase-init/vsphere/cloudbase-init.conf.pkrtpl",
		oldNew: []string{"real_time_clock_utc=true", "real_time_clock_utc=false"},
		want:   "real_time_clock_utc",
	}, {
		name: "the real-time clock set on Azure too", check: "time", file: "scripts/configure-time.ps1",
		oldNew: []string{"if ($platform -eq 'vsphere') {\n    # ESXi", "if ($true) {\n    # ESXi"},
		want:   "outside its vSphere branch",
	}, {
		name: "DHCP's NTP servers whatever ntp_servers says", check: "time", file: "vsphere/windows.pkr.hcl",
		oldNew: []string{"ntp_use_dhcp_config = length(var.ntp_servers) == 0", "ntp_use_dhcp_config = true"},
		want:   "ntp_use_dhcp_config",
	}, {
		name: "evaluations accepted", check: "evaluation", file: "scripts/prepare-windows.ps1",
		oldNew: []string{"        throw ('this machine runs the evaluation edition", "        Write-Output ('this machine runs the evaluation edition"},
		want:   "evaluation edition",
	}, {
		name: "the specialize script not uploaded on vSphere", check: "uploads", file: "vsphere/windows.pkr.hcl",
		oldNew: []string{"      \"${local.root}/../scripts/capwin-specialize.ps1\",\n", ""},
		want:   "images/vsphere: finalize-image.ps1 reads capwin-specialize.ps1",
	}, {
		name: "the NTP servers not passed on", check: "environment", file: "vsphere/windows.pkr.hcl",
		oldNew: []string{"      \"CAPWIN_NTP_SERVERS=${join(\" \", var.ntp_servers)}\",\n", ""},
		want:   "configure-time.ps1 reads $env:CAPWIN_NTP_SERVERS",
	}, {
		name: "whether to update not passed on", check: "environment", file: "azure/variables.pkr.hcl",
		oldNew: []string{"    \"CAPWIN_WINDOWS_UPDATES=${var.windows_updates}\",\n", ""},
		want:   "install-windows-updates.ps1 reads $env:CAPWIN_WINDOWS_UPDATES",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyImages(t)
			change(t, root, tc.file, tc.oldNew...)
			problems := imageChecks[tc.check](t, root)
			for _, p := range problems {
				if strings.Contains(p, tc.want) {
					return
				}
			}
			t.Errorf("check %q: want a problem naming %q, got %q", tc.check, tc.want, problems)
		})
	}
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
// sysprep, and a bounded wait for the generalized state.
func sysprepProblems(t *testing.T, root string) []string {
	cmds := script(t, root, "sysprep-azure.ps1")
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
		step{"Get-Content", []string{`Panther\setuperr.log`}},
		step{"throw", []string{"did not generalize"}},
	)...)
}

// specializeProblems: the built-in Administrator, which the build logged in
// as, and the build's account are disabled on each machine in the specialize
// pass, before its first full boot: cloudbase-init's unattend run on both
// platforms runs the local scripts of the directory finalize-image.ps1 puts
// capwin-specialize.ps1 in; finalize-image.ps1 records the account each
// template logs in as; the first boot runs the script again, as the
// unattend run ignores its exit code; no other script touches an account.
func specializeProblems(t *testing.T, root string) []string {
	problems := inOrder("capwin-specialize.ps1", script(t, root, "capwin-specialize.ps1"),
		step{"Get-LocalUser", nil},
		step{"Where-Object", []string{"S-1-5-21-*-500"}},
		step{"Get-ItemProperty", []string{`'HKLM:\SOFTWARE\capwin\image'`, "'BuildAccount'"}},
		step{"Get-LocalUser", []string{"$recorded.BuildAccount"}},
		step{"Disable-LocalUser", nil},
	)
	const dir = `C:\Windows\Setup\Scripts\specialize\`
	for _, platform := range []string{"vsphere", "azure"} {
		conf := cloudbaseInitConf(t, root, platform, "cloudbase-init-unattend.conf")
		if !slices.Contains(strings.Split(conf["plugins"], ","), "cloudbaseinit.plugins.common.localscripts.LocalScriptsPlugin") {
			problems = append(problems, fmt.Sprintf("%s's cloudbase-init-unattend.conf does not run LocalScriptsPlugin: %s", platform, conf["plugins"]))
		}
		if conf["local_scripts_path"] != dir {
			problems = append(problems, fmt.Sprintf("%s's cloudbase-init-unattend.conf runs the local scripts of %q, not %q", platform, conf["local_scripts_path"], dir))
		}
	}
	// %SystemRoot% is C:\Windows on every image (the answer file and the
	// Marketplace images install there).
	problems = append(problems, inOrder("finalize-image.ps1", script(t, root, "finalize-image.ps1"),
		step{"Join-Path", []string{"$env:SystemRoot", `'Setup\Scripts'`}},
		step{"Join-Path", []string{"$scripts", "'specialize'"}},
		step{"Copy-Item", []string{"capwin-specialize.ps1", "$specialize"}},
		step{"Set-ItemProperty", []string{"$record", "'BuildAccount'", "$env:CAPWIN_BUILD_ACCOUNT"}},
	)...)
	problems = append(problems, inOrder("capwin-first-boot.ps1", script(t, root, "capwin-first-boot.ps1"),
		step{"*specialize\\capwin-specialize.ps1", nil},
		step{"Write-Log", []string{"capwin-specialize"}},
	)...)
	for platform, account := range map[string]string{"vsphere": `"CAPWIN_BUILD_ACCOUNT=${var.winrm_username}"`, "azure": `"CAPWIN_BUILD_ACCOUNT=packer"`} {
		steps := provisioners(t, root, platform)
		finalize := slices.IndexFunc(steps, func(p provisioner) bool { return p.script == "finalize-image.ps1" })
		if finalize < 0 || !strings.Contains(steps[finalize].env, account) {
			problems = append(problems, fmt.Sprintf("images/%s does not give finalize-image.ps1 %s, the account its source logs in as", platform, account))
		}
	}
	for _, name := range []string{"capwin-first-boot.ps1", "finalize-image.ps1", "prepare-windows.ps1", "configure-time.ps1", "install-windows-updates.ps1"} {
		for _, c := range accountChanges(script(t, root, name)) {
			problems = append(problems, fmt.Sprintf("%s changes a local account (%s): capwin-specialize.ps1 alone does", name, c))
		}
	}
	return problems
}

// updateProblems: automatic updates are off by policy from the build's
// start; install-windows-updates.ps1 installs the software updates that are
// not optional and cannot ask for input, retried, and its check fails on a
// release below its minimum revision, a pending restart and an update still
// pending but Defender's definitions.
func updateProblems(t *testing.T, root string) []string {
	problems := inOrder("prepare-windows.ps1", script(t, root, "prepare-windows.ps1"),
		step{"Set-ItemProperty", []string{"$au", "-Name 'NoAutoUpdate' -Value 1 -Type DWord"}},
		step{"Install-WindowsFeature", nil},
	)
	problems = append(problems, lacks(t, root, "prepare-windows.ps1", `$au = 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU'`)...)
	problems = append(problems, inOrder("install-windows-updates.ps1", script(t, root, "install-windows-updates.ps1"),
		// install: search, skip what may ask for input, accept, download,
		// install, each retried.
		step{"Search-Updates", []string{"$session"}},
		step{"continue", nil},
		step{".AcceptEula", nil},
		step{"Retry", []string{"$downloader.Download()"}},
		step{"Retry", []string{"$installer.Install()"}},
		// verify: the build, the revision, no restart pending, nothing
		// pending but Defender's definitions.
		step{"Get-ItemProperty", []string{`Windows NT\CurrentVersion`}},
		step{"throw", []string{"not the release"}},
		step{"throw", []string{"older than"}},
		step{"Test-RestartPending", nil},
		step{"throw", []string{"waits for a restart"}},
		step{"Search-Updates", []string{"$session"}},
		step{"throw", []string{"still not installed"}},
	)...)
	return append(problems, lacks(t, root, "install-windows-updates.ps1",
		`$criteria = "IsInstalled=0 and IsHidden=0 and BrowseOnly=0 and Type='Software'"`,
		`if ($update.InstallationBehavior.CanRequestUserInput) {`,
		`if ($revision -lt $minimum) {`,
		`if (Test-RestartPending) {`,
		`$definitions = 'E0789628-CE08-4437-BE74-2495B842F43B'`,
		`@($_.Categories | Where-Object { $_.CategoryID -eq $definitions }).Count -eq 0`,
	)...)
}

// buildOrderProblems: each template checks the release and edition (and
// turns automatic updates off), restarts, runs Windows Update five times,
// elevated and with a time limit, each followed by a restart, then checks;
// sets the clock after that and before finalize-image.ps1; ends with
// finalize-image.ps1, or on Azure sysprep.
func buildOrderProblems(t *testing.T, root string) []string {
	var problems []string
	for _, platform := range []string{"vsphere", "azure"} {
		steps := provisioners(t, root, platform)
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
		if wantLast := map[string]string{"vsphere": "finalize-image.ps1", "azure": "sysprep-azure.ps1"}[platform]; last != wantLast {
			problems = append(problems, fmt.Sprintf("images/%s's build ends with %s, not %s", platform, last, wantLast))
		}
		configure := slices.IndexFunc(steps, func(p provisioner) bool { return p.script == "configure-time.ps1" })
		finalize := slices.IndexFunc(steps, func(p provisioner) bool { return p.script == "finalize-image.ps1" })
		verify := slices.IndexFunc(steps, func(p provisioner) bool { return p.mode == "verify" })
		if configure < verify || configure > finalize {
			problems = append(problems, fmt.Sprintf("images/%s runs configure-time.ps1 at %d, not between the last Windows Update pass (%d) and finalize-image.ps1 (%d)", platform, configure, verify, finalize))
		}
	}
	return problems
}

// staged is a script's `Join-Path $env:CAPWIN_STAGING '<name>'`.
var staged = regexp.MustCompile(`Join-Path \$env:CAPWIN_STAGING '([^']+)'`)

// uploadProblems: every file a template's scripts take from the staging
// directory is one the template uploads there before.
func uploadProblems(t *testing.T, root string) []string {
	var problems []string
	for _, platform := range []string{"vsphere", "azure"} {
		uploaded := map[string]bool{}
		for _, p := range provisioners(t, root, platform) {
			for _, u := range p.uploads {
				uploaded[u] = true
			}
			if p.script == "" {
				continue
			}
			// The names a script spells out (install-cloudbase-init.ps1
			// loops over its two and throws itself on a missing one).
			for _, m := range staged.FindAllStringSubmatch(scriptText(t, root, p.script), -1) {
				if !uploaded[m[1]] {
					problems = append(problems, fmt.Sprintf("images/%s: %s reads %s from the staging directory, which the template has not uploaded by then", platform, p.script, m[1]))
				}
			}
		}
	}
	return problems
}

// environmentProblems: every $env:CAPWIN_* a script reads, the template's
// provisioner that runs it sets (through a local list where it names one).
func environmentProblems(t *testing.T, root string) []string {
	var problems []string
	read := regexp.MustCompile(`\$env:(CAPWIN_[A-Z0-9_]+)`)
	for _, platform := range []string{"vsphere", "azure"} {
		vars := string(template(t, root, platform, "variables.pkr.hcl").Bytes)
		for _, p := range provisioners(t, root, platform) {
			if p.script == "" {
				continue
			}
			env := p.env
			// concat(local.windows_update_environment, [...]): the list
			// in the locals, as text.
			if m := regexp.MustCompile(`local\.([a-z_]+)`).FindStringSubmatch(env); m != nil {
				if l := regexp.MustCompile(`(?s)\n  ` + m[1] + ` = \[(.*?)\n  \]`).FindStringSubmatch(vars); l != nil {
					env += l[1]
				}
			}
			seen := map[string]bool{}
			for _, m := range read.FindAllStringSubmatch(scriptText(t, root, p.script), -1) {
				if seen[m[1]] {
					continue
				}
				seen[m[1]] = true
				if !strings.Contains(env, `"`+m[1]+`=`) {
					problems = append(problems, fmt.Sprintf("images/%s: %s reads $env:%s, which its provisioner does not set", platform, p.script, m[1]))
				}
			}
		}
	}
	return problems
}

// timeProblems: on vSphere cloudbase-init sets the clock's source at each
// machine's boot (NTPClientPlugin: the service automatic, the DHCP server's
// NTP servers unless the image names some, the real-time clock UTC as
// configure-time.ps1 sets it, so that the plugin does not restart the
// machine to change it); on Azure the image leaves the Hyper-V host's clock
// in charge and the real-time clock as Azure has it.
func timeProblems(t *testing.T, root string) []string {
	var problems []string
	vsphere := cloudbaseInitConf(t, root, "vsphere", "cloudbase-init.conf.pkrtpl")
	if !strings.HasPrefix(vsphere["plugins"], "cloudbaseinit.plugins.windows.ntpclient.NTPClientPlugin,") {
		problems = append(problems, fmt.Sprintf("vSphere's cloudbase-init.conf does not run NTPClientPlugin: %s", vsphere["plugins"]))
	}
	for _, k := range []string{"ntp_enable_service", "ntp_use_dhcp_config", "real_time_clock_utc"} {
		if want := map[string]string{"ntp_enable_service": "true", "ntp_use_dhcp_config": "${ntp_use_dhcp_config}", "real_time_clock_utc": "true"}[k]; vsphere[k] != want {
			problems = append(problems, fmt.Sprintf("vSphere's cloudbase-init.conf sets %s=%q, want %q", k, vsphere[k], want))
		}
	}
	azure := cloudbaseInitConf(t, root, "azure", "cloudbase-init.conf")
	if strings.Contains(azure["plugins"], "NTPClientPlugin") {
		problems = append(problems, fmt.Sprintf("Azure's cloudbase-init.conf runs NTPClientPlugin, which would set the real-time clock (real_time_clock_utc=%q) and restart the machine", azure["real_time_clock_utc"]))
	}
	problems = append(problems, inOrder("configure-time.ps1", script(t, root, "configure-time.ps1"),
		step{"Set-Service", []string{"w32time", "Automatic"}},
		step{"Set-ItemProperty", []string{"'NtpServer'", "$peers"}},
		step{"Set-ItemProperty", []string{"TimeZoneInformation", "'RealTimeIsUniversal'", "-Value 1"}},
	)...)
	// The real-time clock is set on vSphere only.
	data := scriptText(t, root, "configure-time.ps1")
	rtc := strings.Index(data, "'RealTimeIsUniversal'")
	branch := strings.LastIndex(data[:max(rtc, 0)], "if (")
	if rtc < 0 || branch < 0 || !strings.HasPrefix(data[branch:], "if ($platform -eq 'vsphere')") {
		problems = append(problems, "configure-time.ps1 sets RealTimeIsUniversal outside its vSphere branch")
	}
	// The template renders ntp_use_dhcp_config from ntp_servers.
	f := template(t, root, "vsphere", "windows.pkr.hcl")
	rendered := false
	_ = hclsyntax.VisitAll(body(f), func(n hclsyntax.Node) hcl.Diagnostics {
		if b, ok := n.(*hclsyntax.Block); ok && b.Type == "provisioner" && len(b.Labels) == 1 && b.Labels[0] == "file" {
			r := b.Range()
			text := string(r.SliceBytes(f.Bytes))
			if strings.Contains(text, "cloudbase-init.conf.pkrtpl") {
				rendered = strings.Contains(text, "ntp_use_dhcp_config = length(var.ntp_servers) == 0")
			}
		}
		return nil
	})
	if !rendered {
		problems = append(problems, "images/vsphere does not render cloudbase-init.conf.pkrtpl with ntp_use_dhcp_config = length(var.ntp_servers) == 0")
	}
	return problems
}

// evaluationProblems: prepare-windows.ps1, the build's first step, refuses
// an evaluation edition, before it installs anything, unless
// allow_evaluation says the image is for a lab.
func evaluationProblems(t *testing.T, root string) []string {
	problems := inOrder("prepare-windows.ps1", script(t, root, "prepare-windows.ps1"),
		step{"Get-ItemProperty", []string{`Windows NT\CurrentVersion`}},
		step{"throw", []string{"evaluation edition", "allow_evaluation"}},
		step{"Install-WindowsFeature", nil},
	)
	return append(problems, lacks(t, root, "prepare-windows.ps1",
		"$edition = $version.EditionID", "if ($edition -like '*Eval*') {", "if ($env:CAPWIN_ALLOW_EVALUATION -ne 'true') {")...)
}
