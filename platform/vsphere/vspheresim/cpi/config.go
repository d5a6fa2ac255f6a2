// Package cpi is the simulation's vSphere cloud controller manager: the
// cloud node controllers of k8s.io/cloud-provider, the ones every external
// cloud controller manager runs, with a vSphere cloud that finds a Node's VM
// the way cloud-provider-vsphere (the vSphere CPI) does: as read in its
// release 1.32, through Instances; the flavors deploy 1.36, which serves
// the same lookup through InstancesV2. It
// reads its configuration (vsphere.conf) and its vCenter credentials (the
// Secret the configuration names) as the CPI does, and finds a VM only
// through what vCenter knows of it.
//
// What it does, as the CPI does:
//   - a Node without a provider ID is looked up by its name among the
//     host names VMware Tools reported (SearchIndex.FindAllByDnsName, the
//     name lower-cased), then by IP address when the name is one; exactly
//     one VM must match, and the host name it reports must equal the node
//     name exactly (the CPI caches the VM under that host name);
//   - the VM must have reported a host name and network adapters; adapters
//     with no virtual device behind them (deviceConfigId -1) and loopback
//     or link-local addresses are skipped, and the first IPv4 address left
//     is both the InternalIP and the ExternalIP;
//   - the provider ID is vsphere://<config.uuid in lower case>, the
//     instance type vsphere-vm.cpu-<n>.mem-<GiB>gb.os-<os>;
//   - an instance exists while its BIOS UUID finds a VM, and is shut down
//     while the VM is not powered on.
//
// What it does not do: zones from vSphere tags (the labels section), the
// nodes section's subnet and network-name address selection, NSX-T load
// balancers and routes, several vCenters, the legacy INI format. A
// configuration asking for any of them is refused, so that the simulation
// never accepts what it does not model.
package cpi

import (
	"bytes"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Config is vsphere.conf in the CPI's YAML format, as far as the
// simulation models it.
type Config struct {
	Global  VCenterConfig            `json:"global"`
	VCenter map[string]VCenterConfig `json:"vcenter"`
}

// VCenterConfig is the global section or one vCenter's.
type VCenterConfig struct {
	Server          string   `json:"server,omitempty"`
	Port            uint     `json:"port,omitempty"`
	InsecureFlag    bool     `json:"insecureFlag,omitempty"`
	Datacenters     []string `json:"datacenters,omitempty"`
	Thumbprint      string   `json:"thumbprint,omitempty"`
	CAFile          string   `json:"caFile,omitempty"`
	SecretName      string   `json:"secretName,omitempty"`
	SecretNamespace string   `json:"secretNamespace,omitempty"`
	User            string   `json:"user,omitempty"`
	Password        string   `json:"password,omitempty"`
}

// VCenter is the one vCenter of a configuration, the global section's
// values filled in where its own are unset.
type VCenter struct {
	Server          string
	Port            uint
	Insecure        bool
	Datacenters     []string
	Thumbprint      string
	SecretName      string
	SecretNamespace string
}

// ParseConfig reads vsphere.conf. Fields the simulation does not model are
// an error, as are a missing server, datacenter or credentials Secret.
func ParseConfig(data []byte) (*VCenter, error) {
	var c Config
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &c); err != nil {
		return nil, fmt.Errorf("vsphere.conf (the simulation models the global and vcenter sections only): %w", err)
	}
	if len(c.VCenter) != 1 {
		return nil, fmt.Errorf("vsphere.conf: %d vcenter entries; the simulation models exactly one", len(c.VCenter))
	}
	var name string
	var v VCenterConfig
	for k, c := range c.VCenter {
		name, v = k, c
	}
	g := c.Global
	out := VCenter{
		Server:          first(v.Server, name),
		Port:            v.Port,
		Insecure:        v.InsecureFlag || g.InsecureFlag,
		Datacenters:     v.Datacenters,
		Thumbprint:      first(v.Thumbprint, g.Thumbprint),
		SecretName:      first(v.SecretName, g.SecretName),
		SecretNamespace: first(v.SecretNamespace, g.SecretNamespace),
	}
	if out.Port == 0 {
		out.Port = g.Port
	}
	if out.Port == 0 {
		out.Port = 443
	}
	if len(out.Datacenters) == 0 {
		out.Datacenters = g.Datacenters
	}
	var errs []error
	if len(out.Datacenters) == 0 {
		errs = append(errs, fmt.Errorf("vcenter %s: no datacenters", name))
	}
	if out.SecretName == "" || out.SecretNamespace == "" {
		errs = append(errs, fmt.Errorf("vcenter %s: secretName and secretNamespace are required (the simulation reads credentials from a Secret only)", name))
	}
	if v.CAFile != "" || g.CAFile != "" {
		errs = append(errs, errors.New("caFile: the simulation trusts vCenter by thumbprint only"))
	}
	if !out.Insecure && out.Thumbprint == "" {
		errs = append(errs, fmt.Errorf("vcenter %s: neither a thumbprint nor insecureFlag: the CPI could not trust the simulated vCenter's certificate", name))
	}
	return &out, errors.Join(errs...)
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
