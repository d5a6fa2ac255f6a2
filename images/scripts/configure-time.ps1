# Sets where the clock of every node made from the image comes from.
#
# Environment (set by the Packer template):
#   CAPWIN_PLATFORM     vsphere or azure
#   CAPWIN_NTP_SERVERS  the NTP servers, separated by spaces; empty for the
#                       platform's default (below)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$platform = $env:CAPWIN_PLATFORM
if ($platform -ne 'vsphere' -and $platform -ne 'azure') {
    throw ('CAPWIN_PLATFORM is {0}; expected vsphere or azure' -f $platform)
}

# The clock. The Windows Time service starts automatically; a workgroup
# machine polls its peers with SpecialPollInterval (once a week by default),
# hourly here, and any other peer at most every 1024 seconds
# (MaxPollInterval 10, as a power of two): TLS and bootstrap tokens fail on a
# clock minutes wrong.
Set-Service -Name w32time -StartupType Automatic
$w32time = 'HKLM:\SYSTEM\CurrentControlSet\Services\W32Time'
Set-ItemProperty -Path (Join-Path $w32time 'TimeProviders\NtpClient') -Name 'SpecialPollInterval' -Value 3600 -Type DWord
Set-ItemProperty -Path (Join-Path $w32time 'Config') -Name 'MaxPollInterval' -Value 10 -Type DWord
$servers = @($env:CAPWIN_NTP_SERVERS -split ' ' | Where-Object { $_ -ne '' })
if ($servers.Count -gt 0) {
    # 0x9: a client (0x8) polled every SpecialPollInterval (0x1). Written
    # where w32tm /config /manualpeerlist /syncfromflags:manual writes, as
    # the service need not run now.
    $peers = ($servers | ForEach-Object { '{0},0x9' -f $_ }) -join ' '
    Set-ItemProperty -Path (Join-Path $w32time 'Parameters') -Name 'NtpServer' -Value $peers -Type String
    Set-ItemProperty -Path (Join-Path $w32time 'Parameters') -Name 'Type' -Value 'NTP' -Type String
    Write-Output ('time: NTP servers {0}' -f $peers)
} elseif ($platform -eq 'vsphere') {
    Write-Output 'time: the DHCP server''s NTP servers (option 42), which cloudbase-init sets at first boot; else Windows'' default'
} else {
    Write-Output 'time: the Hyper-V host''s clock (VMICTimeProvider), as Azure sets it up'
}
if ($platform -eq 'vsphere') {
    # ESXi keeps a VM's real-time clock in UTC (what image-builder's vSphere
    # Windows images assume too); Windows reads it as local time unless told
    # otherwise. cloudbase-init's NTPClientPlugin
    # checks the same value (real_time_clock_utc=true in its
    # configuration), and would set it and restart the machine if it
    # differed.
    Set-ItemProperty -Path 'HKLM:\SYSTEM\CurrentControlSet\Control\TimeZoneInformation' -Name 'RealTimeIsUniversal' -Value 1 -Type DWord
    Write-Output 'time: the real-time clock is UTC'
}
exit 0
