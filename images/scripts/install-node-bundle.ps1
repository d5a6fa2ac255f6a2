# Installs the capwin node bundle with capwin-node install: every file is
# checked against the bundle's manifest and laid out, the services are
# registered disabled and the firewall rules added. join enables the services
# on the node later.
#
# Environment (set by the Packer template):
#   CAPWIN_BUNDLE_ZIP          the uploaded bundle zip
#   CAPWIN_BUNDLE_SHA256       the zip's SHA-256 as computed where Packer runs
#   CAPWIN_KUBERNETES_VERSION  the Kubernetes version the image is named for
#   CAPWIN_HYPERV              true to require Hyper-V too
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$zip = $env:CAPWIN_BUNDLE_ZIP
# The upload is checked whole before anything in it runs.
$sum = (Get-FileHash -Algorithm SHA256 -Path $zip).Hash.ToLowerInvariant()
if ($sum -ne $env:CAPWIN_BUNDLE_SHA256.ToLowerInvariant()) {
    throw ('{0} has SHA-256 {1}, expected {2}' -f $zip, $sum, $env:CAPWIN_BUNDLE_SHA256)
}

# The agent installs itself from the bundle: it is taken out of the zip to run.
Add-Type -AssemblyName System.IO.Compression.FileSystem
$work = Join-Path $env:TEMP 'capwin-node-install'
New-Item -ItemType Directory -Force -Path $work | Out-Null
$agent = Join-Path $work 'capwin-node.exe'
$archive = [IO.Compression.ZipFile]::OpenRead($zip)
try {
    $entry = $archive.GetEntry('capwin-node.exe')
    if ($null -eq $entry) {
        throw ('{0} has no capwin-node.exe' -f $zip)
    }
    [IO.Compression.ZipFileExtensions]::ExtractToFile($entry, $agent, $true)
} finally {
    $archive.Dispose()
}

$arguments = @('install', '--bundle', $zip)
if ($env:CAPWIN_HYPERV -eq 'true') {
    $arguments += '--hyperv'
}
# Under Windows PowerShell 5.1 a native command's stderr line would stop the
# script when Stop is in force: the agent's output is passed on as text and
# its exit code decides.
& {
    $ErrorActionPreference = 'Continue'
    & $agent @arguments 2>&1 | ForEach-Object { "$_" }
}
if ($LASTEXITCODE -ne 0) {
    throw ('capwin-node install failed with exit code {0}' -f $LASTEXITCODE)
}
Remove-Item -Path $work -Recurse -Force

# The image's name promises a Kubernetes version: the installed manifest must
# name the same one.
$manifestPath = Join-Path $env:ProgramFiles 'capwin\manifest.json'
$manifest = Get-Content -Raw -Path $manifestPath | ConvertFrom-Json
if ($manifest.kubernetesVersion -ne $env:CAPWIN_KUBERNETES_VERSION) {
    throw ('the bundle holds Kubernetes {0}, the image is built for {1}' -f $manifest.kubernetesVersion, $env:CAPWIN_KUBERNETES_VERSION)
}
Write-Output ('capwin node bundle for Kubernetes {0} installed ({1} files)' -f $manifest.kubernetesVersion, @($manifest.files).Count)

# Real-time scanning of every layer containerd extracts makes pulls slow
# and can make them fail; where Microsoft Defender runs, the container
# runtime's processes and its directories are left out of it.
if ($null -ne (Get-Command -Name Add-MpPreference -ErrorAction SilentlyContinue)) {
    $bin = Join-Path $env:ProgramFiles 'capwin\bin'
    Add-MpPreference -ExclusionProcess @((Join-Path $bin 'containerd.exe'), (Join-Path $bin 'containerd-shim-runhcs-v1.exe'), (Join-Path $bin 'ctr.exe'))
    Add-MpPreference -ExclusionPath @((Join-Path $env:ProgramData 'containerd'))
    Write-Output 'Microsoft Defender: containerd, its shim, ctr and C:\ProgramData\containerd excluded'
}
exit 0
