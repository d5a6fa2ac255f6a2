# vSphere only: writes VMware Tools' tools.conf so that the guest reports the
# addresses of every adapter, and records the vmxnet3 adapters' offload
# settings in the build log.
#
# Environment (set by the Packer template):
#   CAPWIN_STAGING  the directory tools.conf was uploaded to
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# Once a node's HNS network exists, its address is on the host adapter
# "vEthernet (Ethernet0)", which VMware Tools leaves out by default on Windows
# (exclude-nics defaults to vEthernet*): the VM would report no address to
# vCenter, capwin or the vSphere cloud provider. tools.conf sets exclude-nics
# to nothing. The file replaces any tools.conf the base image had.
$toolsData = Join-Path $env:ProgramData 'VMware\VMware Tools'
if (-not (Test-Path -Path (Join-Path $env:ProgramFiles 'VMware\VMware Tools\rpctool.exe'))) {
    # cloudbase-init's VMware guestinfo service reads guestinfo through rpctool.
    throw 'VMware Tools is not installed (no rpctool.exe): cloudbase-init could not read guestinfo'
}
New-Item -ItemType Directory -Force -Path $toolsData | Out-Null
Copy-Item -Path (Join-Path $env:CAPWIN_STAGING 'tools.conf') -Destination (Join-Path $toolsData 'tools.conf') -Force
Write-Output ('{0} written' -f (Join-Path $toolsData 'tools.conf'))

# flannel's VXLAN traffic on vmxnet3 has met checksum faults with the NIC's
# UDP tunnel offload on Linux guests. No documented advanced property of the
# Windows vmxnet3 driver for it is known to this image, so nothing is changed
# here; what the adapters report is logged for checking on a real vCenter.
$adapters = @(Get-NetAdapter | Where-Object { $_.InterfaceDescription -like '*vmxnet3*' })
foreach ($adapter in $adapters) {
    Write-Output ('{0} ({1}), driver {2}' -f $adapter.Name, $adapter.InterfaceDescription, $adapter.DriverVersion)
    Get-NetAdapterAdvancedProperty -Name $adapter.Name -ErrorAction SilentlyContinue |
        Format-Table -AutoSize -Property @('DisplayName', 'DisplayValue', 'RegistryKeyword') | Out-String -Width 200 | Write-Output
    Get-NetAdapterEncapsulatedPacketTaskOffload -Name $adapter.Name -ErrorAction SilentlyContinue |
        Format-List | Out-String -Width 200 | Write-Output
}
if ($adapters.Count -eq 0) {
    Write-Output 'no vmxnet3 adapter found'
}
exit 0
