# Last step before sysprep: arranges the first boot of each machine made from
# the image and removes what the build left behind.
#
# Environment (set by the Packer template):
#   CAPWIN_PLATFORM       vsphere or azure
#   CAPWIN_STAGING        the directory the build uploaded its files to
#   CAPWIN_BUILD_ACCOUNT  the account the build logged in as
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$platform = $env:CAPWIN_PLATFORM
if ($platform -ne 'vsphere' -and $platform -ne 'azure') {
    throw ('CAPWIN_PLATFORM is {0}; expected vsphere or azure' -f $platform)
}

# Windows Setup runs %WINDIR%\Setup\Scripts\SetupComplete.cmd once, as SYSTEM,
# after it finishes on a new machine. It makes the machine's SSH host keys and
# (vSphere) closes what the build opened, then starts cloudbase-init, which
# stayed manual so that it never ran on the build VM.
$scripts = Join-Path $env:SystemRoot 'Setup\Scripts'
New-Item -ItemType Directory -Force -Path $scripts | Out-Null
$firstBoot = Join-Path $scripts 'capwin-first-boot.ps1'
Copy-Item -Path (Join-Path $env:CAPWIN_STAGING 'capwin-first-boot.ps1') -Destination $firstBoot -Force
# The specialize pass of each machine's Windows Setup runs cloudbase-init
# with cloudbase-init-unattend.conf, whose LocalScriptsPlugin runs every
# file of this directory (its local_scripts_path): capwin-specialize.ps1
# alone.
$specialize = Join-Path $scripts 'specialize'
New-Item -ItemType Directory -Force -Path $specialize | Out-Null
Get-ChildItem -Path $specialize | Remove-Item -Force -Recurse
Copy-Item -Path (Join-Path $env:CAPWIN_STAGING 'capwin-specialize.ps1') -Destination $specialize -Force
# The build's account, which capwin-specialize.ps1 disables on every machine
# (with the built-in Administrator, when it is another).
$record = 'HKLM:\SOFTWARE\capwin\image'
New-Item -Path $record -Force | Out-Null
Set-ItemProperty -Path $record -Name 'BuildAccount' -Value $env:CAPWIN_BUILD_ACCOUNT -Type String
$setupComplete = @(
    '@echo off',
    ('powershell.exe -NoProfile -ExecutionPolicy Bypass -File "{0}" -Platform {1}' -f $firstBoot, $platform),
    'sc config cloudbase-init start= auto && net start cloudbase-init'
)
Set-Content -Path (Join-Path $scripts 'SetupComplete.cmd') -Value $setupComplete -Encoding Ascii

# Nothing of a cloudbase-init run may carry over to the machines: its plugin
# states are kept per instance in the registry, its logs on disk.
Stop-Service -Name cloudbase-init -ErrorAction SilentlyContinue
Remove-Item -Path 'HKLM:\SOFTWARE\Cloudbase Solutions\Cloudbase-Init' -Recurse -Force -ErrorAction SilentlyContinue
Get-ChildItem -Path (Join-Path $env:ProgramFiles 'Cloudbase Solutions\Cloudbase-Init\log') -ErrorAction SilentlyContinue | Remove-Item -Force -Recurse

# sysprep runs with cloudbase-init's Unattend.xml (on vSphere the template's
# shutdown_command, on Azure sysprep-azure.ps1); it must be there.
$unattend = Join-Path $env:ProgramFiles 'Cloudbase Solutions\Cloudbase-Init\conf\Unattend.xml'
if (-not (Test-Path -Path $unattend)) {
    throw ('{0} is missing' -f $unattend)
}

if ($platform -eq 'vsphere') {
    # The installation's answer file held the build's Administrator password;
    # Windows keeps a copy, and an auto-logon may have left it in the registry.
    Remove-Item -Path (Join-Path $env:SystemRoot 'Panther\unattend.xml') -Force -ErrorAction SilentlyContinue
    Remove-Item -Path (Join-Path $env:SystemRoot 'Panther\Unattend') -Recurse -Force -ErrorAction SilentlyContinue
    $winlogon = 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon'
    Remove-ItemProperty -Path $winlogon -Name 'DefaultPassword' -ErrorAction SilentlyContinue
    Set-ItemProperty -Path $winlogon -Name 'AutoAdminLogon' -Value '0'
}

# The uploaded files (the bundle zip among them) are installed; they go.
Remove-Item -Path $env:CAPWIN_STAGING -Recurse -Force -ErrorAction SilentlyContinue
Write-Output 'SetupComplete.cmd written, cloudbase-init state cleared, build files removed'
exit 0
