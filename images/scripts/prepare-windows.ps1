# Prepares Windows for the capwin node software: checks that the machine runs
# the Windows Server build the image is named for and is not an evaluation
# edition (unless allowed), turns automatic updates off, enables the
# Containers feature (and Hyper-V for Hyper-V isolation) and adds OpenSSH
# Server. The features take effect after
# the restart that follows this script: capwin-node install refuses to run
# before they are installed.
#
# Environment (set by the Packer template):
#   CAPWIN_WINDOWS_RELEASE   the release the image is named for (ltsc2022)
#   CAPWIN_WINDOWS_BUILD     its build, major.minor.build (10.0.20348)
#   CAPWIN_HYPERV            true to enable Hyper-V too
#   CAPWIN_ALLOW_EVALUATION  true to accept an evaluation edition (labs)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# Windows containers run only on a host of their own build, and the node's
# pause image is chosen by build: media or a Marketplace SKU of another
# release than the image's name would make nodes that cannot run their pods.
$version = Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$build = '{0}.{1}.{2}' -f $version.CurrentMajorVersionNumber, $version.CurrentMinorVersionNumber, $version.CurrentBuildNumber
if ($build -ne $env:CAPWIN_WINDOWS_BUILD) {
    throw ('this machine runs Windows build {0}, but the image is built as {1} (build {2}): the ISO, base template or Marketplace SKU does not match windows_release' -f $build, $env:CAPWIN_WINDOWS_RELEASE, $env:CAPWIN_WINDOWS_BUILD)
}
Write-Output ('Windows build {0} ({1})' -f $build, $env:CAPWIN_WINDOWS_RELEASE)

# An evaluation edition (EditionID ServerDatacenterEval, ServerStandardEval;
# DISM says ServerDatacenterEvalCor of Server Core)
# runs for about 180 days from each machine's first boot; then Windows shuts
# the machine down every hour. Nodes made from it would fail in half a year,
# all within days of each other: refused unless the image is for a lab.
$edition = $version.EditionID
if ($edition -like '*Eval*') {
    if ($env:CAPWIN_ALLOW_EVALUATION -ne 'true') {
        throw ('this machine runs the evaluation edition {0}: its nodes would shut down every hour once the evaluation ends, about 180 days after their first boot. Install from licensed media (product_key), or set allow_evaluation = true for a lab image' -f $edition)
    }
    Write-Output ('edition {0}: an evaluation, accepted because allow_evaluation is true (a lab image)' -f $edition)
} else {
    Write-Output ('edition {0}' -f $edition)
}

# Windows Update by policy (HKLM\SOFTWARE\Policies, as Group Policy's
# "Configure Automatic Updates" writes it): Automatic Updates off, so a node
# never installs an update or restarts for one by itself. The Windows Update
# Agent's own setting does nothing since Windows Server 2016, and it is all
# cloudbase-init's WindowsAutoUpdatesPlugin would set from the Azure VM's
# enableAutomaticUpdates. AUOptions 2 (notify before downloading) is what
# applies should the policy be turned on. Set at the build's start: its own
# Windows Update passes must meet no automatic one (0x80240016) and no
# restart Windows decides.
$au = 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU'
New-Item -Path $au -Force | Out-Null
Set-ItemProperty -Path $au -Name 'NoAutoUpdate' -Value 1 -Type DWord
Set-ItemProperty -Path $au -Name 'AUOptions' -Value 2 -Type DWord
Write-Output 'Windows Update: automatic updates off by policy'

$features = @('Containers')
if ($env:CAPWIN_HYPERV -eq 'true') {
    # Hyper-V needs the CPU's virtualization extensions inside the VM: nested
    # virtualization on vSphere (NestedHV), a VM size that supports it on Azure.
    $features += 'Hyper-V'
}
foreach ($name in $features) {
    $feature = Get-WindowsFeature -Name $name
    if ($feature.Installed) {
        Write-Output ('{0} is installed' -f $name)
        continue
    }
    $result = Install-WindowsFeature -Name $name
    if (-not $result.Success) {
        throw ('installing the Windows feature {0} failed (exit code {1})' -f $name, $result.ExitCode)
    }
    Write-Output ('{0} installed; restart needed: {1}' -f $name, $result.RestartNeeded)
}

# OpenSSH Server is a Windows capability (a feature on demand); adding it
# downloads it from Windows Update unless the machine has another source.
# Windows Server 2025 ships OpenSSH Server built in: an sshd service is
# enough, whether or not a capability is listed.
$capability = Get-WindowsCapability -Online | Where-Object { $_.Name -like 'OpenSSH.Server*' } | Select-Object -First 1
if ($null -eq $capability) {
    if ($null -ne (Get-Service -Name sshd -ErrorAction SilentlyContinue)) {
        Write-Output 'OpenSSH Server is built in (the sshd service exists)'
        exit 0
    }
    throw 'this Windows has neither an OpenSSH.Server capability nor an sshd service'
}
if ($capability.State -ne 'Installed') {
    Add-WindowsCapability -Online -Name $capability.Name | Out-Null
    Write-Output ('{0} added' -f $capability.Name)
} else {
    Write-Output ('{0} is installed' -f $capability.Name)
}
exit 0
