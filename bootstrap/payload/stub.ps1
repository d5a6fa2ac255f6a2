#ps1_sysnative
# capwin bootstrap for a Windows Server node, run once by cloudbase-init.
# This script is the same for every node. The node's own data is the base64
# JSON assigned to $NodeConfig below: it is decoded as data, never run.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$NodeConfig = '__CAPWIN_NODE_CONFIG__'

$Root = Join-Path $env:ProgramData 'capwin'
$ConfigPath = Join-Path $Root 'node-config.json'
$LogPath = Join-Path $Root 'bootstrap.log'
$Agent = Join-Path $env:ProgramFiles 'capwin\capwin-node.exe'

function Write-Log([string]$Message) {
    $line = '{0} {1}' -f (Get-Date -Format o), $Message
    Add-Content -Path $LogPath -Value $line -Encoding UTF8
}

New-Item -ItemType Directory -Force -Path $Root | Out-Null
# The configuration holds a bootstrap token: only SYSTEM and Administrators may read it.
$acl = New-Object System.Security.AccessControl.DirectorySecurity
$acl.SetAccessRuleProtection($true, $false)
foreach ($identity in @('NT AUTHORITY\SYSTEM', 'BUILTIN\Administrators')) {
    $rule = New-Object System.Security.AccessControl.FileSystemAccessRule($identity, 'FullControl', 'ContainerInherit,ObjectInherit', 'None', 'Allow')
    $acl.AddAccessRule($rule)
}
Set-Acl -Path $Root -AclObject $acl
[IO.File]::WriteAllBytes($ConfigPath, [Convert]::FromBase64String($NodeConfig))
Write-Log 'node configuration written'

if (-not (Test-Path -Path $Agent)) {
    $config = Get-Content -Raw -Path $ConfigPath | ConvertFrom-Json
    if (-not $config.agent) {
        Write-Log 'capwin-node.exe is missing and the configuration names no download'
        throw 'capwin-node.exe is not in the image and the configuration names no download'
    }
    # Logged without user info or query: a download URL may carry a signature.
    $url = [Uri]$config.agent.url
    Write-Log ('downloading capwin-node from {0}://{1}{2}' -f $url.Scheme, $url.Authority, $url.AbsolutePath)
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $Agent) | Out-Null
    [Net.ServicePointManager]::SecurityProtocol = [Net.SecurityProtocolType]::Tls12
    $download = $Agent + '.download'
    $request = @{ UseBasicParsing = $true; Uri = $config.agent.url; OutFile = $download }
    if ($config.proxy -and $config.proxy.httpsProxy) { $request.Proxy = $config.proxy.httpsProxy }
    Invoke-WebRequest @request
    $sum = (Get-FileHash -Algorithm SHA256 -Path $download).Hash
    if ($sum -ne $config.agent.sha256) {
        Remove-Item -Force -Path $download
        Write-Log ('capwin-node checksum mismatch: got {0}' -f $sum)
        throw 'capwin-node.exe does not match the configured SHA-256'
    }
    Move-Item -Force -Path $download -Destination $Agent
}

Write-Log 'running capwin-node join'
# Windows PowerShell turns a native command's stderr into error records, which
# 'Stop' would make fatal on the first line: the exit code decides instead.
$ErrorActionPreference = 'Continue'
& $Agent join --config $ConfigPath 2>&1 | ForEach-Object { "$_" } | Out-File -FilePath $LogPath -Append -Encoding UTF8
$joinExitCode = $LASTEXITCODE
$ErrorActionPreference = 'Stop'
if ($joinExitCode -ne 0) {
    Write-Log ('capwin-node join failed with exit code {0}' -f $joinExitCode)
    throw ('capwin-node join failed with exit code {0}; see {1}' -f $joinExitCode, $LogPath)
}
Write-Log 'capwin-node join finished'
