# Azure only: generalizes the VM, the last step of the build. The sequence is
# the one the Packer azure-arm builder documents (its guest agent services
# running first, since the agent takes part in sysprep; sysprep /quit leaves
# the VM running; the builder captures it once the image state says it is
# generalized), with cloudbase-init's Unattend.xml as the answer file, as
# image-builder's Azure Windows images do. Sysprep keeps that answer file and
# Windows Setup runs with it on each new VM: it skips the OOBE screens and
# runs cloudbase-init with cloudbase-init-unattend.conf in the specialize
# pass. Azure's own Windows provisioning (computer name, administrator, guest
# agent, the report that the VM is ready) does not run; the cloudbase-init
# service does that work (images/files/cloudbase-init/azure/).
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$unattend = Join-Path $env:ProgramFiles 'Cloudbase Solutions\Cloudbase-Init\conf\Unattend.xml'
if (-not (Test-Path -Path $unattend)) {
    throw ('{0} is missing: without it Azure provisions the VM with its own answer file and nothing reports it ready' -f $unattend)
}

foreach ($service in Get-Service -Name @('RdAgent', 'WindowsAzureTelemetryService', 'WindowsAzureGuestAgent') -ErrorAction SilentlyContinue) {
    while ((Get-Service -Name $service.Name).Status -ne 'Running') {
        Start-Sleep -Seconds 5
    }
}
# No local password expires while the image waits to be used. The built-in
# Administrator stays enabled here: on Azure it is the packer user this very
# session runs as (Azure makes the osProfile's administrator by renaming
# it), and every request of the session after this script logs in again, so
# disabling it would cut the build off before sysprep's end is seen. Each
# machine made from the image disables it in its specialize pass
# (capwin-specialize.ps1).
& net.exe accounts /maxpwage:unlimited
if ($LASTEXITCODE -ne 0) { throw "net accounts /maxpwage:unlimited exited $LASTEXITCODE" }
# An answer file left here would be applied instead of the one passed.
Remove-Item -Path (Join-Path $env:SystemRoot 'System32\Sysprep\unattend.xml') -Force -ErrorAction SilentlyContinue
& (Join-Path $env:SystemRoot 'System32\Sysprep\Sysprep.exe') /oobe /generalize /quiet /quit /mode:vm ('/unattend:{0}' -f $unattend)
# Sysprep takes minutes; one that fails never reaches the state, and its
# reason is in its own log.
$deadline = (Get-Date).AddMinutes(30)
while ($true) {
    $imageState = (Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Setup\State').ImageState
    if ($imageState -eq 'IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE') {
        break
    }
    if ((Get-Date) -gt $deadline) {
        Get-Content -Path (Join-Path $env:SystemRoot 'System32\Sysprep\Panther\setuperr.log') -ErrorAction SilentlyContinue | Write-Output
        throw ('sysprep did not generalize the machine within 30 minutes (image state {0}); its errors are above, from System32\Sysprep\Panther\setuperr.log' -f $imageState)
    }
    Write-Output $imageState
    Start-Sleep -Seconds 10
}
Write-Output ('generalized with {0}' -f $unattend)
exit 0
