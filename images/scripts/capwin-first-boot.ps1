# Runs once on each machine made from the image, from SetupComplete.cmd, as
# SYSTEM, after Windows Setup and before cloudbase-init starts. Each step is
# best effort and logged: SetupComplete.cmd ignores failures, and the node's
# bootstrap must still run.
param(
    [ValidateSet('vsphere', 'azure')]
    [string]$Platform
)
$ErrorActionPreference = 'Continue'
$ProgressPreference = 'SilentlyContinue'

$logDir = Join-Path $env:ProgramData 'capwin'
New-Item -ItemType Directory -Force -Path $logDir | Out-Null
$log = Join-Path $logDir 'image-first-boot.log'

function Write-Log([string]$Message) {
    Add-Content -Path $log -Value ('{0} {1}' -f (Get-Date -Format o), $Message) -Encoding UTF8
}

function Invoke-Step([string]$Name, [scriptblock]$Step) {
    try {
        & $Step
        Write-Log ('{0}: done' -f $Name)
    } catch {
        Write-Log ('{0}: failed: {1}' -f $Name, $_)
    }
}

# The image has no SSH host keys (every clone would share them): this
# machine's are made now; ssh-keygen -A makes only the missing ones.
Invoke-Step 'ssh host keys' {
    $keygen = Join-Path $env:SystemRoot 'System32\OpenSSH\ssh-keygen.exe'
    & $keygen -A 2>&1 | ForEach-Object { Write-Log ("ssh-keygen: $_") }
    if ($LASTEXITCODE -ne 0) {
        throw ('ssh-keygen -A exited with {0}' -f $LASTEXITCODE)
    }
    Start-Service -Name sshd -ErrorAction Stop
}

# capwin-specialize.ps1 disabled the built-in Administrator and the
# build's account in the specialize pass, where a failure is only in
# cloudbase-init's log (its unattend run ignores a local script's exit
# code), and where it did not run if cloudbase-init found no metadata. Here
# it is checked, done again if needed, and said.
Invoke-Step 'build accounts disabled' {
    & (Join-Path $PSScriptRoot 'specialize\capwin-specialize.ps1') *>&1 | ForEach-Object { Write-Log ("capwin-specialize: $_") }
    if ($LASTEXITCODE -ne 0) {
        throw ('capwin-specialize.ps1 exited with {0}' -f $LASTEXITCODE)
    }
}

if ($Platform -eq 'vsphere') {
    # The build reached the VM over WinRM with basic authentication and
    # unencrypted HTTP, as the built-in Administrator whose password the
    # build knew (the specialize pass disabled that account:
    # capwin-specialize.ps1). None of that stays on a node: logins are the
    # SSH keys cloudbase-init writes for its own user.
    Invoke-Step 'WinRM basic authentication and unencrypted traffic off' {
        # The WSMan: drive needs the service; a failure must be logged as
        # one, not pass as a non-terminating error.
        Start-Service -Name WinRM -ErrorAction Stop
        Set-Item -Path WSMan:\localhost\Service\Auth\Basic -Value $false -ErrorAction Stop
        Set-Item -Path WSMan:\localhost\Service\AllowUnencrypted -Value $false -ErrorAction Stop
        Remove-NetFirewallRule -Name 'capwin-build-winrm-http' -ErrorAction SilentlyContinue
    }
}
exit 0
