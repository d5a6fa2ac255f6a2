# Runs on each machine made from the image in the specialize pass of Windows
# Setup, before the machine's first full boot: cloudbase-init's unattend run
# (cloudbase-init-unattend.conf, LocalScriptsPlugin) runs it as SYSTEM.
# capwin-first-boot.ps1 runs it again, and logs what it says: that run
# ignores a local script's exit code, and does not run it if cloudbase-init
# found no metadata.
#
# It disables the built-in Administrator (RID 500), whatever it is named,
# and the account the build logged in as (finalize-image.ps1 records its
# name), if that is another: the build knew their passwords (the
# Administrator on vSphere's ISO path, Azure's packer user, which Azure
# makes by renaming the built-in one, a base template's account). Sysprep
# also leaves the built-in Administrator marked "must change password at
# next logon", which can stall Windows' first logon screen and with it the
# first boot (image-builder saw intermittent OSProvisioningTimedOut on
# Azure from this). The build could not disable them itself: its session
# ran as one of them until the end. Logins to a node are cloudbase-init's
# user's.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$accounts = @(Get-LocalUser | Where-Object { $_.SID.Value -like 'S-1-5-21-*-500' })
if ($accounts.Count -ne 1) {
    throw ('found {0} accounts with RID 500, expected 1' -f $accounts.Count)
}
$recorded = Get-ItemProperty -Path 'HKLM:\SOFTWARE\capwin\image' -Name 'BuildAccount' -ErrorAction SilentlyContinue
if ($null -ne $recorded -and $recorded.BuildAccount -ne '') {
    $build = Get-LocalUser -Name $recorded.BuildAccount -ErrorAction SilentlyContinue
    if ($null -ne $build -and $build.SID.Value -ne $accounts[0].SID.Value) {
        $accounts += $build
    }
}
foreach ($account in $accounts) {
    if ($account.Enabled) {
        $account | Disable-LocalUser
        Write-Output ('disabled {0} ({1})' -f $account.Name, $account.SID.Value)
    } else {
        Write-Output ('{0} ({1}) is disabled' -f $account.Name, $account.SID.Value)
    }
}
exit 0
