# capwin-node install: inbound firewall rules for what the control plane and
# load balancers reach on a node. The same for every node; no value is
# spliced in. Windows Server turns the firewall on by default.
$ErrorActionPreference = 'Stop'
$rules = @(
    @{ Name = 'capwin-kubelet'; DisplayName = 'capwin: kubelet API (TCP 10250)'; Port = 10250 },
    @{ Name = 'capwin-kube-proxy-health'; DisplayName = 'capwin: kube-proxy health (TCP 10256)'; Port = 10256 }
)
foreach ($rule in $rules) {
    if (-not (Get-NetFirewallRule -Name $rule.Name -ErrorAction SilentlyContinue)) {
        New-NetFirewallRule -Name $rule.Name -DisplayName $rule.DisplayName -Direction Inbound -Protocol TCP -LocalPort $rule.Port -Action Allow | Out-Null
    }
}
