# Pulls the pause image pinned for this Windows build into containerd's store
# in the image, so that a node's first pod sandbox does not wait for a
# download (or fail where registry.k8s.io cannot be reached).
#
# capwin-node pause-image prints the image the agent's pinned table names for
# this build: the one join configures containerd with, unless the node
# configuration names another. containerd runs here only for the pull, with
# root, state and pipe set to its Windows defaults, which are the ones the
# configuration join writes uses; ctr pulls into the k8s.io namespace, which
# is the CRI's.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$installDir = Join-Path $env:ProgramFiles 'capwin'
$agent = Join-Path $installDir 'capwin-node.exe'
$containerd = Join-Path $installDir 'bin\containerd.exe'
$ctr = Join-Path $installDir 'bin\ctr.exe'
$pipe = '\\.\pipe\containerd-containerd'
$root = 'C:\ProgramData\containerd\root'
$state = 'C:\ProgramData\containerd\state'

# Runs a native command with its stderr passed on as text (under Windows
# PowerShell 5.1 a stderr line would otherwise stop the script) and returns
# its output; its exit code decides.
function Invoke-Native([string]$Program, [string[]]$Arguments) {
    $ErrorActionPreference = 'Continue'
    $output = @(& $Program @Arguments 2>&1 | ForEach-Object { "$_" })
    if ($LASTEXITCODE -ne 0) {
        $output | Write-Host
        throw ('{0} {1} failed with exit code {2}' -f $Program, ($Arguments -join ' '), $LASTEXITCODE)
    }
    return $output
}

# A named pipe is listed in \\.\pipe\; opening it to test would take a connection.
function Test-Pipe([string]$Path) {
    return ([System.IO.Directory]::GetFiles('\\.\pipe\') -contains $Path)
}

$image = (Invoke-Native $agent @('pause-image') | Select-Object -Last 1).Trim()
if ($image -eq '') {
    throw 'capwin-node pause-image printed no image'
}
Write-Output ('pulling {0}' -f $image)

if (Get-Process -Name containerd -ErrorAction SilentlyContinue) {
    throw 'containerd is already running: the pull needs a containerd of its own'
}
$logDir = Join-Path $env:TEMP 'capwin-prepull'
New-Item -ItemType Directory -Force -Path $logDir | Out-Null
$process = Start-Process -FilePath $containerd -PassThru -WindowStyle Hidden `
    -ArgumentList @('--root', $root, '--state', $state, '--address', $pipe) `
    -RedirectStandardOutput (Join-Path $logDir 'containerd.out.log') `
    -RedirectStandardError (Join-Path $logDir 'containerd.err.log')
try {
    $deadline = (Get-Date).AddMinutes(2)
    while (-not (Test-Pipe $pipe)) {
        if ($process.HasExited) {
            Get-Content -Path (Join-Path $logDir 'containerd.err.log') -ErrorAction SilentlyContinue | Write-Output
            throw ('containerd exited with code {0} before it listened on {1}' -f $process.ExitCode, $pipe)
        }
        if ((Get-Date) -gt $deadline) {
            throw ('containerd did not listen on {0} within 2 minutes' -f $pipe)
        }
        Start-Sleep -Seconds 1
    }
    Invoke-Native $ctr @('--address', $pipe, '--namespace', 'k8s.io', 'images', 'pull', $image) | Write-Output
    $names = Invoke-Native $ctr @('--address', $pipe, '--namespace', 'k8s.io', 'images', 'list', '--quiet')
    if ($names -notcontains $image) {
        throw ('{0} is not in the k8s.io namespace after the pull' -f $image)
    }
    # The CRI labels the images it pulls itself as managed, and the sandbox
    # image as pinned, so that image garbage collection keeps it; an image
    # pulled with ctr has neither label until the CRI pulls it again.
    Invoke-Native $ctr @('--address', $pipe, '--namespace', 'k8s.io', 'images', 'label', $image, 'io.cri-containerd.image=managed', 'io.cri-containerd.pinned=pinned') | Write-Output
} finally {
    if (-not $process.HasExited) {
        Stop-Process -Id $process.Id -Force
        $process.WaitForExit(60000) | Out-Null
    }
}
Remove-Item -Path $logDir -Recurse -Force -ErrorAction SilentlyContinue
Write-Output ('{0} is in containerd''s k8s.io namespace' -f $image)
exit 0
