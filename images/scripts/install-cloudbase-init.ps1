# Installs cloudbase-init from a pinned MSI, checked against its SHA-256, and
# puts the platform's configuration in place.
#
# Environment (set by the Packer template):
#   CAPWIN_CLOUDBASE_INIT_URL          the MSI's URL
#   CAPWIN_CLOUDBASE_INIT_SHA256       its SHA-256
#   CAPWIN_CLOUDBASE_INIT_MIN_VERSION  the oldest version accepted (1.1.7)
#   CAPWIN_STAGING                     the directory the configuration files were uploaded to
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$installDir = Join-Path $env:ProgramFiles 'Cloudbase Solutions\Cloudbase-Init'
$confDir = Join-Path $installDir 'conf'
$msi = Join-Path $env:TEMP 'CloudbaseInitSetup.msi'

# Windows PowerShell 5.1 on Windows Server 2019 does not offer TLS 1.2 by default.
[Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
Invoke-WebRequest -UseBasicParsing -Uri $env:CAPWIN_CLOUDBASE_INIT_URL -OutFile $msi
$sum = (Get-FileHash -Algorithm SHA256 -Path $msi).Hash.ToLowerInvariant()
if ($sum -ne $env:CAPWIN_CLOUDBASE_INIT_SHA256.ToLowerInvariant()) {
    throw ('{0} has SHA-256 {1}, expected {2}' -f $env:CAPWIN_CLOUDBASE_INIT_URL, $sum, $env:CAPWIN_CLOUDBASE_INIT_SHA256)
}

# RUN_SERVICE_AS_LOCAL_SYSTEM: the service runs as LocalSystem instead of a
# local "cloudbase-init" administrator account with a stored password.
$log = Join-Path $env:TEMP 'cloudbase-init-install.log'
$install = Start-Process -FilePath 'msiexec.exe' -Wait -PassThru -ArgumentList @('/i', ('"{0}"' -f $msi), '/qn', '/norestart', '/l*v', ('"{0}"' -f $log), 'RUN_SERVICE_AS_LOCAL_SYSTEM=1')
if ($install.ExitCode -ne 0 -and $install.ExitCode -ne 3010) {
    throw ('installing cloudbase-init failed with exit code {0} (log: {1})' -f $install.ExitCode, $log)
}
Remove-Item -Path $msi -Force

# cloudbase-init 1.1.5 and 1.1.6 fail on a guestinfo network entry without
# nameservers (every DHCP entry); 1.1.7 fixed that. The MSI records
# "Cloudbase-Init <version>" with DisplayVersion <version>.0.
$entry = Get-ChildItem -Path 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall' |
    ForEach-Object { Get-ItemProperty -Path $_.PSPath } |
    Where-Object { $_.DisplayName -like 'Cloudbase-Init*' } | Select-Object -First 1
if ($null -eq $entry) {
    throw 'cloudbase-init is not in the installed programs after its installation'
}
if ([version]$entry.DisplayVersion -lt [version]$env:CAPWIN_CLOUDBASE_INIT_MIN_VERSION) {
    throw ('cloudbase-init {0} is installed; the image needs {1} or later' -f $entry.DisplayVersion, $env:CAPWIN_CLOUDBASE_INIT_MIN_VERSION)
}
Write-Output ('{0} installed ({1})' -f $entry.DisplayName, $entry.DisplayVersion)

# The platform's configuration replaces what the MSI generated: the main
# service's cloudbase-init.conf and cloudbase-init-unattend.conf, which the
# MSI's Unattend.xml runs in the specialize pass after sysprep (both
# platforms' sysprep uses that Unattend.xml).
foreach ($name in @('cloudbase-init.conf', 'cloudbase-init-unattend.conf')) {
    $source = Join-Path $env:CAPWIN_STAGING $name
    if (Test-Path -Path $source) {
        Copy-Item -Path $source -Destination (Join-Path $confDir $name) -Force
        Write-Output ('{0} written' -f (Join-Path $confDir $name))
    }
}
foreach ($name in @('cloudbase-init.conf', 'cloudbase-init-unattend.conf')) {
    if (-not (Test-Path -Path (Join-Path $env:CAPWIN_STAGING $name))) {
        throw ('no {0} was uploaded to {1}' -f $name, $env:CAPWIN_STAGING)
    }
}

# The service must first run on a machine made from the image, not on the
# build VM: it stays manual until the first boot's SetupComplete.cmd starts it
# (what the MSI's own SetSetupComplete.cmd does too).
Stop-Service -Name cloudbase-init -ErrorAction SilentlyContinue
Set-Service -Name cloudbase-init -StartupType Manual
exit 0
