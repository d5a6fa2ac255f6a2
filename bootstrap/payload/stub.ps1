#ps1_sysnative
# capwin bootstrap for a Windows Server node, run by cloudbase-init at first
# boot and, after a failure that may pass, again after a reboot.
# This script is the same for every node. The node's own data is the base64
# JSON assigned to $NodeConfig below: it is decoded as data, never run.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$NodeConfig = '__CAPWIN_NODE_CONFIG__'

# capwin-node join: 0 joined, 3 a failure that may pass, else one that will
# not. This script, to cloudbase-init: 1003 reboot and run it again, 1002 run
# it again at the next boot, 1 done for good. Tests hold these to the Go side.
$JoinExitOK = 0
$JoinExitRetry = 3
$ExitFailed = 1
$ExitRunAgainAtNextBoot = 1002
$ExitRebootAndRunAgain = 1003
# The last attempt that may reboot: a node that cannot join must not reboot forever.
$MaxAttempts = 5

$Root = Join-Path $env:ProgramData 'capwin'
$ConfigPath = Join-Path $Root 'node-config.json'
$LogPath = Join-Path $Root 'bootstrap.log'
$AttemptsPath = Join-Path $Root 'bootstrap-attempts'
$Agent = Join-Path $env:ProgramFiles 'capwin\capwin-node.exe'

# Logging is best effort: a line that cannot be written never decides the outcome.
function Write-Log([string]$Message) {
    $line = '{0} {1}' -f (Get-Date -Format o), $Message
    Add-Content -Path $LogPath -Value $line -Encoding UTF8 -ErrorAction Continue
}

# Tells cloudbase-init what to do after a failure (see the exit codes above).
function Exit-Failed([bool]$Retryable, [string]$Reason) {
    if (-not $Retryable) {
        Write-Log ('{0}; not retried: the bootstrap will not run again' -f $Reason)
        exit $ExitFailed
    }
    if ($Attempt -lt $MaxAttempts) {
        Write-Log ('{0}; attempt {1} of {2}: rebooting to run the bootstrap again' -f $Reason, $Attempt, $MaxAttempts)
        exit $ExitRebootAndRunAgain
    }
    Write-Log ('{0}; attempt {1}, no automatic retry left: the bootstrap runs again at the next boot' -f $Reason, $Attempt)
    exit $ExitRunAgainAtNextBoot
}

# Any other error that stops the script is final.
trap { Exit-Failed $false ('the bootstrap stopped: {0}' -f $_) }

New-Item -ItemType Directory -Force -Path $Root | Out-Null
# The configuration holds a bootstrap token: only SYSTEM and Administrators may read it.
$acl = New-Object System.Security.AccessControl.DirectorySecurity
$acl.SetAccessRuleProtection($true, $false)
foreach ($identity in @('NT AUTHORITY\SYSTEM', 'BUILTIN\Administrators')) {
    $rule = New-Object System.Security.AccessControl.FileSystemAccessRule($identity, 'FullControl', 'ContainerInherit,ObjectInherit', 'None', 'Allow')
    $acl.AddAccessRule($rule)
}
Set-Acl -Path $Root -AclObject $acl

# Attempts are counted on disk, across reboots.
$Attempt = 1
$previous = 0
if ((Test-Path -Path $AttemptsPath) -and [int]::TryParse([string](Get-Content -Raw -Path $AttemptsPath), [ref]$previous)) {
    $Attempt = $previous + 1
}
Set-Content -Path $AttemptsPath -Value $Attempt -Encoding ASCII
Write-Log ('bootstrap attempt {0}' -f $Attempt)

[IO.File]::WriteAllBytes($ConfigPath, [Convert]::FromBase64String($NodeConfig))
Write-Log 'node configuration written'

if (-not (Test-Path -Path $Agent)) {
    Exit-Failed $false ('{0} is missing: the machine was not made from a capwin node image (images/ in the capwin repository builds one)' -f $Agent)
}

Write-Log 'running capwin-node join'
# Windows PowerShell turns a native command's stderr into error records, which
# 'Stop' would make fatal on the first line: the exit code decides instead.
$ErrorActionPreference = 'Continue'
& $Agent join --config $ConfigPath 2>&1 | ForEach-Object { "$_" } | Out-File -FilePath $LogPath -Append -Encoding UTF8
$joinExitCode = $LASTEXITCODE
$ErrorActionPreference = 'Stop'
if ($joinExitCode -eq $JoinExitOK) {
    Write-Log 'capwin-node join finished'
    exit 0
}
Exit-Failed ($joinExitCode -eq $JoinExitRetry) ('capwin-node join failed with exit code {0} (capwin-node status says why)' -f $joinExitCode)
