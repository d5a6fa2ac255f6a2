# vSphere ISO builds only: run by the answer file at the first logon after
# Windows is installed. Installs VMware Tools (the vmxnet3 network driver,
# and rpctool, through which cloudbase-init reads guestinfo) from the VMware
# Tools ISO, then opens WinRM for Packer. capwin-first-boot.ps1 closes WinRM
# again on every machine made from the image.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
Start-Transcript -Path (Join-Path $env:SystemRoot 'Temp\capwin-first-logon.log') -Append | Out-Null

$setup = Get-PSDrive -PSProvider FileSystem |
    ForEach-Object { Join-Path $_.Root 'setup64.exe' } |
    Where-Object { Test-Path -Path $_ } | Select-Object -First 1
if ($null -eq $setup) {
    throw 'no VMware Tools ISO is attached (no setup64.exe on any drive)'
}
# /s /v"/qn REBOOT=R": silent, no reboot; the driver works without one.
$tools = Start-Process -FilePath $setup -Wait -PassThru -ArgumentList @('/s', '/v', '"/qn REBOOT=R"')
if ($tools.ExitCode -ne 0 -and $tools.ExitCode -ne 3010) {
    throw ('VMware Tools setup failed with exit code {0}' -f $tools.ExitCode)
}

# WinRM's firewall exception applies to private networks only: wait for the
# vmxnet3 adapter's network and make it private.
$deadline = (Get-Date).AddMinutes(10)
while (@(Get-NetConnectionProfile -ErrorAction SilentlyContinue).Count -eq 0) {
    if ((Get-Date) -gt $deadline) {
        throw 'no network came up within 10 minutes of the VMware Tools installation'
    }
    Start-Sleep -Seconds 5
}
Get-NetConnectionProfile | Set-NetConnectionProfile -NetworkCategory Private

# Packer's WinRM communicator: HTTP on 5985 with basic authentication.
Enable-PSRemoting -SkipNetworkProfileCheck -Force | Out-Null
Set-Item -Path WSMan:\localhost\Service\AllowUnencrypted -Value $true
Set-Item -Path WSMan:\localhost\Service\Auth\Basic -Value $true
New-NetFirewallRule -Name 'capwin-build-winrm-http' -DisplayName 'WinRM HTTP for the image build' -Direction Inbound -Protocol TCP -LocalPort 5985 -Action Allow | Out-Null
Set-Service -Name WinRM -StartupType Automatic
Restart-Service -Name WinRM
Stop-Transcript | Out-Null
