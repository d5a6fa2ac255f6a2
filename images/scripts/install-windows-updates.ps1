# Patches the image at build time, the only time capwin's nodes get Windows
# updates: the nodes themselves never install one (configure-windows.ps1
# turns automatic updates off), and are patched by rolling out an image
# built again.
#
# The template runs it four times: three to install (restarting after each:
# an update can hold another back until it is installed), then to check that
# no update is pending and that the build carries the release's minimum
# update revision. The Windows Update Agent refuses to download or install
# for a remote caller, and a WinRM session is one: the template runs each
# pass as a scheduled task (Packer's elevated_user).
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
# Software only: drivers come with the hypervisor's tools, not from Windows
# Update.
$criteria = "IsInstalled=0 and IsHidden=0 and Type='Software'"
# OperationResultCode: 2 succeeded, 3 succeeded with errors (some updates
# failed; the verify pass finds them still pending).
$done = @(2, 3)

if ($mode -eq 'install') {
    if (-not $enabled) {
        Write-Output 'windows_updates is false: no update installed'
        exit 0
    }
    $session = New-Object -ComObject Microsoft.Update.Session
    $session.ClientApplicationID = 'capwin image build'
    $search = $session.CreateUpdateSearcher().Search($criteria)
    if ($search.ResultCode -ne 2) {
        throw ('searching Windows Update ended with result code {0}' -f $search.ResultCode)
    }
    $updates = New-Object -ComObject Microsoft.Update.UpdateColl
    foreach ($update in $search.Updates) {
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
    $download = $downloader.Download()
    if ($done -notcontains $download.ResultCode) {
        throw ('downloading {0} updates ended with result code {1}' -f $updates.Count, $download.ResultCode)
    }
    $installer = $session.CreateUpdateInstaller()
    $installer.Updates = $updates
    $install = $installer.Install()
    for ($i = 0; $i -lt $updates.Count; $i++) {
        Write-Output ('{0}: result code {1}' -f $updates.Item($i).Title, $install.GetUpdateResult($i).ResultCode)
    }
    if ($done -notcontains $install.ResultCode) {
        throw ('installing {0} updates ended with result code {1}' -f $updates.Count, $install.ResultCode)
    }
    Write-Output ('{0} updates installed; a restart is needed: {1}' -f $updates.Count, $install.RebootRequired)
    exit 0
}

# verify: what the image ships with.
$version = Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$revision = [int]$version.UBR
$minimum = [int]$env:CAPWIN_MIN_REVISION
if ($revision -lt $minimum) {
    throw ('Windows is at {0}.{1}, older than {0}.{2}, the update Windows container networking needs on this release: set windows_updates = true, or start from media or a base image with a newer cumulative update' -f $env:CAPWIN_WINDOWS_BUILD, $revision, $minimum)
}
Write-Output ('Windows {0}.{1} (at least {0}.{2})' -f $env:CAPWIN_WINDOWS_BUILD, $revision, $minimum)
if ($enabled) {
    $session = New-Object -ComObject Microsoft.Update.Session
    $session.ClientApplicationID = 'capwin image build'
    $pending = $session.CreateUpdateSearcher().Search($criteria)
    if ($pending.ResultCode -ne 2) {
        throw ('searching Windows Update ended with result code {0}' -f $pending.ResultCode)
    }
    if ($pending.Updates.Count -gt 0) {
        $titles = @($pending.Updates | ForEach-Object { $_.Title }) -join '; '
        throw ('{0} updates are still not installed after three passes: {1}' -f $pending.Updates.Count, $titles)
    }
    Write-Output 'no update is pending'
}
exit 0
