# Azure only: generalizes the VM the way the Packer azure-arm builder
# documents. The Azure guest agent takes part in sysprep, so its services must
# run first; sysprep /quit leaves the VM running and the builder captures it
# once the image state says it is ready. No answer file is passed: Azure
# provisions a generalized image with its own.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

foreach ($service in Get-Service -Name @('RdAgent', 'WindowsAzureTelemetryService', 'WindowsAzureGuestAgent') -ErrorAction SilentlyContinue) {
    while ((Get-Service -Name $service.Name).Status -ne 'Running') {
        Start-Sleep -Seconds 5
    }
}
# Sysprep would leave the built-in Administrator marked "must change
# password at next logon", which stalls Azure's first-boot provisioning
# (OSProvisioningTimedOut); Azure creates the VM's own administrator. An
# answer file left by an earlier step would be applied instead of Azure's.
& net.exe accounts /maxpwage:unlimited
if ($LASTEXITCODE -ne 0) { throw "net accounts /maxpwage:unlimited exited $LASTEXITCODE" }
Disable-LocalUser -Name Administrator
Remove-Item -Path (Join-Path $env:SystemRoot 'System32\Sysprep\unattend.xml') -Force -ErrorAction SilentlyContinue
& (Join-Path $env:SystemRoot 'System32\Sysprep\Sysprep.exe') /oobe /generalize /quiet /quit /mode:vm
while ($true) {
    $imageState = (Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Setup\State').ImageState
    if ($imageState -eq 'IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE') {
        break
    }
    Write-Output $imageState
    Start-Sleep -Seconds 10
}
Write-Output 'generalized'
exit 0
