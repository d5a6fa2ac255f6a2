# Configures OpenSSH Server so that the keys cloudbase-init writes for its user
# (<profile>\.ssh\authorized_keys) let that user in, and so that no clone of
# the image shares another's host keys.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$sshDir = Join-Path $env:ProgramData 'ssh'
$configPath = Join-Path $sshDir 'sshd_config'

# sshd's first start creates C:\ProgramData\ssh with the access rules it
# requires, the default sshd_config and host keys; the configuration is
# edited after that rather than written from nothing.
Start-Service -Name sshd
Stop-Service -Name sshd

# The default configuration sends members of Administrators (cloudbase-init's
# user is one) to administrators_authorized_keys instead of their own
# authorized_keys. A Match block lasts until the next Match line or the end of
# the file, whatever the indentation, so all of it goes.
$kept = New-Object System.Collections.Generic.List[string]
$inAdministratorsBlock = $false
foreach ($line in Get-Content -Path $configPath) {
    if ($line -match '^\s*Match\s') {
        $inAdministratorsBlock = ($line -match '^\s*Match\s+Group\s+administrators\s*$')
    }
    if (-not $inAdministratorsBlock) {
        $kept.Add($line)
    }
}
Set-Content -Path $configPath -Value $kept -Encoding Ascii
if (Select-String -Path $configPath -Pattern 'administrators_authorized_keys' -Quiet) {
    throw ('{0} still sends administrators to administrators_authorized_keys' -f $configPath)
}

# Host keys made here would be every clone's: they go, and each machine makes
# its own at its first boot (capwin-first-boot.ps1).
Get-ChildItem -Path $sshDir -Filter 'ssh_host_*' | Remove-Item -Force

Set-Service -Name sshd -StartupType Automatic
$rule = Get-NetFirewallRule -Name 'OpenSSH-Server-In-TCP' -ErrorAction SilentlyContinue
if ($null -eq $rule) {
    New-NetFirewallRule -Name 'OpenSSH-Server-In-TCP' -DisplayName 'OpenSSH Server (sshd)' -Direction Inbound -Protocol TCP -LocalPort 22 -Action Allow | Out-Null
} else {
    Enable-NetFirewallRule -Name 'OpenSSH-Server-In-TCP'
}
Write-Output 'sshd: starts automatically, TCP 22 open, no Match Group administrators block, host keys removed'
exit 0
