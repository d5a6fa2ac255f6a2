# Patches the image at build time, the only time capwin's nodes get Windows
# updates: the nodes themselves never install one (prepare-windows.ps1 turns
# automatic updates off), and are patched by rolling out an image built
# again.
#
# The template runs it in install mode five times, restarting after each
# (an update can hold another back until it is installed and the machine
# restarted), then once in verify mode: nothing pending (but Defender's
# definitions, which Microsoft publishes several times a day), no restart
# pending, and the release's minimum update revision. Within one install
# pass, it installs again as long as updates are offered and none asks for
# a restart. The Windows Update Agent refuses to download or install for a
# remote caller, and a WinRM session is one: the template runs each pass as
# a scheduled task (Packer's elevated_user), with a time limit.
#
# Environment (set by the Packer template):
#   CAPWIN_WINDOWS_UPDATE_MODE  install or verify
#   CAPWIN_WINDOWS_UPDATES      true to install updates; false installs none,
#                               and verify checks only the revision
#   CAPWIN_WINDOWS_BUILD        the release's build, major.minor.build
#   CAPWIN_MIN_REVISION         the lowest update build revision (UBR) the
#                               image may have: 681 makes 10.0.20348.681
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$mode = $env:CAPWIN_WINDOWS_UPDATE_MODE
if ($mode -ne 'install' -and $mode -ne 'verify') {
    throw ('CAPWIN_WINDOWS_UPDATE_MODE is {0}; expected install or verify' -f $mode)
}
$enabled = $env:CAPWIN_WINDOWS_UPDATES -eq 'true'
# Software only (drivers come with the hypervisor's tools), and not the
# optional ones (previews), which Windows Update offers for people to pick.
$criteria = "IsInstalled=0 and IsHidden=0 and BrowseOnly=0 and Type='Software'"
# OperationResultCode: 2 succeeded, 3 succeeded with errors (some updates
# failed; the next pass tries them again, the verify pass fails on them).
$done = @(2, 3)
# Defender's security intelligence updates, published several times a day:
# one is nearly always offered, and none needs a restart.
$definitions = 'E0789628-CE08-4437-BE74-2495B842F43B'

# Retry runs step, and runs it again after a failure, twice, a minute
# apart: the Windows Update Agent fails now and then while it is busy
# (0x80240016, another installation in progress) or while its service
# restarts (0x8024401C, 0x80072EFE).
function Retry([string]$What, [scriptblock]$Step) {
    for ($attempt = 1; ; $attempt++) {
        try {
            return & $Step
        } catch {
            if ($attempt -ge 3) {
                throw ('{0} failed {1} times; the last time: {2}' -f $What, $attempt, $_)
            }
            # Write-Host: what a function writes to its output is what it
            # returns.
            Write-Host ('{0} failed, trying again in a minute: {1}' -f $What, $_)
            Start-Sleep -Seconds 60
        }
    }
}

function Search-Updates($Session) {
    $result = Retry 'searching Windows Update' { $Session.CreateUpdateSearcher().Search($criteria) }
    if ($result.ResultCode -ne 2) {
        throw ('searching Windows Update ended with result code {0}' -f $result.ResultCode)
    }
    return $result
}

# Test-RestartPending reports whether Windows waits for a restart to finish
# installing: sysprep fails while one does.
function Test-RestartPending {
    if ((New-Object -ComObject Microsoft.Update.SystemInfo).RebootRequired) {
        return $true
    }
    return (Test-Path -Path 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending')
}

$session = New-Object -ComObject Microsoft.Update.Session
$session.ClientApplicationID = 'capwin image build'

if ($mode -eq 'install') {
    if (-not $enabled) {
        Write-Output 'windows_updates is false: no update installed'
        exit 0
    }
    # Rounds of install until nothing is offered or a restart is needed,
    # which the template's next restart gives.
    for ($round = 1; $round -le 5; $round++) {
        $search = Search-Updates $session
        $updates = New-Object -ComObject Microsoft.Update.UpdateColl
        foreach ($update in $search.Updates) {
            # An update that may ask for input would wait for ever.
            if ($update.InstallationBehavior.CanRequestUserInput) {
                Write-Output ('skipped, it may ask for input: {0}' -f $update.Title)
                continue
            }
            if (-not $update.EulaAccepted) {
                $update.AcceptEula()
            }
            $updates.Add($update) | Out-Null
            Write-Output ('to install: {0}' -f $update.Title)
        }
        if ($updates.Count -eq 0) {
            Write-Output 'no update to install'
            exit 0
        }
        $downloader = $session.CreateUpdateDownloader()
        $downloader.Updates = $updates
        $download = Retry 'downloading updates' { $downloader.Download() }
        if ($done -notcontains $download.ResultCode) {
            throw ('downloading {0} updates ended with result code {1}' -f $updates.Count, $download.ResultCode)
        }
        $installer = $session.CreateUpdateInstaller()
        $installer.Updates = $updates
        $install = Retry 'installing updates' { $installer.Install() }
        for ($i = 0; $i -lt $updates.Count; $i++) {
            Write-Output ('{0}: result code {1}' -f $updates.Item($i).Title, $install.GetUpdateResult($i).ResultCode)
        }
        if ($done -notcontains $install.ResultCode) {
            throw ('installing {0} updates ended with result code {1}' -f $updates.Count, $install.ResultCode)
        }
        Write-Output ('round {0}: {1} updates installed; a restart is needed: {2}' -f $round, $updates.Count, $install.RebootRequired)
        if ($install.RebootRequired) {
            exit 0
        }
    }
    exit 0
}

# verify: what the image ships with.
$version = Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$build = '{0}.{1}.{2}' -f $version.CurrentMajorVersionNumber, $version.CurrentMinorVersionNumber, $version.CurrentBuildNumber
if ($build -ne $env:CAPWIN_WINDOWS_BUILD) {
    throw ('Windows is now build {0}, not the release''s {1}: an update changed the release' -f $build, $env:CAPWIN_WINDOWS_BUILD)
}
$revision = [int]$version.UBR
$minimum = [int]$env:CAPWIN_MIN_REVISION
if ($revision -lt $minimum) {
    throw ('Windows is at {0}.{1}, older than {0}.{2}, the update Windows container networking needs on this release: set windows_updates = true, or start from media or a base image with a newer cumulative update' -f $env:CAPWIN_WINDOWS_BUILD, $revision, $minimum)
}
Write-Output ('Windows {0}.{1} (at least {0}.{2})' -f $env:CAPWIN_WINDOWS_BUILD, $revision, $minimum)
if (Test-RestartPending) {
    throw 'Windows still waits for a restart to finish installing updates: sysprep would fail'
}
if ($enabled) {
    $pending = @((Search-Updates $session).Updates | Where-Object {
            -not $_.InstallationBehavior.CanRequestUserInput -and
            @($_.Categories | Where-Object { $_.CategoryID -eq $definitions }).Count -eq 0
        })
    if ($pending.Count -gt 0) {
        $titles = @($pending | ForEach-Object { $_.Title }) -join '; '
        throw ('{0} updates are still not installed after five passes: {1}' -f $pending.Count, $titles)
    }
    Write-Output 'no update is pending'
}
exit 0
