# Runs on each machine made from the image in the specialize pass of Windows
# Setup, before the machine's first full boot: cloudbase-init's unattend run
# (cloudbase-init-unattend.conf, LocalScriptsPlugin) runs it as SYSTEM.
#
# It disables the built-in Administrator (RID 500), whatever it is named. The
# build logged in as that account (the Administrator on vSphere's ISO path,
# Azure's packer user, which Azure makes by renaming it), so its password was
# known to the build; and sysprep leaves it marked "must change password at
# next logon", which can stall Windows' first logon screen and with it the
# first boot (image-builder saw intermittent OSProvisioningTimedOut on Azure
# from this). The build could not disable it itself: the account carried
# its session until the end. Logins to a node are cloudbase-init's user's.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$builtin = @(Get-LocalUser | Where-Object { $_.SID.Value -like 'S-1-5-21-*-500' })
if ($builtin.Count -ne 1) {
    throw ('found {0} accounts with RID 500, expected 1' -f $builtin.Count)
}
$builtin | Disable-LocalUser
Write-Output ('disabled the built-in Administrator {0}' -f $builtin[0].Name)
exit 0
