package cpi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// ProviderName is the CPI's: provider IDs are vsphere://<BIOS UUID>.
const ProviderName = "vsphere"

// Errors of the CPI's words.
var (
	ErrNoVMFound        = errors.New("no VM found")
	ErrMultipleVMsFound = errors.New("multiple VMs found")
	ErrNodeNotFound     = errors.New("node not found")
)

// Cloud is the simulated CPI's cloudprovider.Interface: Instances and
// Zones, as cloud-provider-vsphere 1.32 implements them (it has no
// InstancesV2).
type Cloud struct {
	cfg        *VCenter
	user, pass string

	mu      sync.Mutex
	stopped bool
	client  *vim25.Client
	session *session.Manager
	byName  map[string]*nodeInfo // by the host name VMware Tools reported
	byUUID  map[string]*nodeInfo
}

type nodeInfo struct {
	uuid      string
	vm        *object.VirtualMachine
	nodeType  string
	addresses []corev1.NodeAddress
}

// New is the CPI for a configuration and the credentials Secret's data,
// whose keys are <server>.username and <server>.password.
func New(cfg *VCenter, secret map[string][]byte) (*Cloud, error) {
	user, pass := string(secret[cfg.Server+".username"]), string(secret[cfg.Server+".password"])
	if user == "" || pass == "" {
		return nil, fmt.Errorf("secret %s/%s has no %s.username and %s.password", cfg.SecretNamespace, cfg.SecretName, cfg.Server, cfg.Server)
	}
	return &Cloud{cfg: cfg, user: user, pass: pass, byName: map[string]*nodeInfo{}, byUUID: map[string]*nodeInfo{}}, nil
}

// connect logs in once, as the CPI's connection manager does, verifying
// the server by the configured thumbprint.
func (c *Cloud) connect(ctx context.Context) (*vim25.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errors.New("the CPI is stopped")
	}
	if c.client != nil {
		if ok, err := c.session.SessionIsActive(ctx); err == nil && ok {
			return c.client, nil
		}
	}
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(c.cfg.Server, strconv.FormatUint(uint64(c.cfg.Port), 10)), Path: "/sdk"}
	sc := soap.NewClient(u, c.cfg.Insecure)
	if c.cfg.Thumbprint != "" {
		sc.SetThumbprint(u.Host, c.cfg.Thumbprint)
	}
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("connecting to vCenter %s: %w", u.Host, err)
	}
	sm := session.NewManager(vc)
	if err := sm.Login(ctx, url.UserPassword(c.user, c.pass)); err != nil {
		return nil, fmt.Errorf("logging in to vCenter %s: %w", u.Host, err)
	}
	c.client, c.session = vc, sm
	return vc, nil
}

// Logout ends the CPI's vCenter session; it does not log in again.
func (c *Cloud) Logout(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.session != nil {
		_ = c.session.Logout(ctx)
		c.client, c.session = nil, nil
	}
}

type searchBy int

const (
	byUUID searchBy = iota
	byName
	byIP
)

// discover finds the node's VM and caches what the CPI caches of it
// (NodeManager.DiscoverNode).
func (c *Cloud) discover(ctx context.Context, id string, by searchBy) (*nodeInfo, error) {
	vc, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	vm, hostName, err := c.find(ctx, vc, id, by)
	if errors.Is(err, ErrNoVMFound) && by == byName {
		vm, hostName, err = c.find(ctx, vc, id, byIP)
	}
	if err != nil {
		return nil, err
	}
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"guest", "summary", "config"}, &o); err != nil {
		return nil, err
	}
	info, err := describe(&o, hostName)
	if err != nil {
		return nil, err
	}
	info.vm = vm
	c.mu.Lock()
	c.byName[hostName] = info
	c.byUUID[info.uuid] = info
	c.mu.Unlock()
	return info, nil
}

// find searches every configured datacenter; it returns the VM and the
// name the CPI caches it under: the guest's host name, or the IP it was
// found by.
func (c *Cloud) find(ctx context.Context, vc *vim25.Client, id string, by searchBy) (*object.VirtualMachine, string, error) {
	id = strings.TrimSpace(id)
	if by != byIP {
		id = strings.ToLower(id)
	}
	if by == byIP && net.ParseIP(id) == nil {
		return nil, "", ErrNoVMFound
	}
	s := object.NewSearchIndex(vc)
	for _, name := range c.cfg.Datacenters {
		dc, err := find.NewFinder(vc).Datacenter(ctx, name)
		if err != nil {
			return nil, "", fmt.Errorf("datacenter %s: %w", name, err)
		}
		var refs []object.Reference
		switch by {
		case byUUID:
			var ref object.Reference
			ref, err = s.FindByUuid(ctx, dc, id, true, nil)
			if ref != nil {
				refs = append(refs, ref)
			}
		case byName:
			refs, err = s.FindAllByDnsName(ctx, dc, id, true)
		case byIP:
			var ref object.Reference
			ref, err = s.FindByIp(ctx, dc, id, true)
			if ref != nil {
				refs = append(refs, ref)
			}
		}
		if err != nil {
			return nil, "", err
		}
		switch len(refs) {
		case 0:
			continue
		case 1:
		default:
			return nil, "", fmt.Errorf("%w: %q in datacenter %s", ErrMultipleVMsFound, id, name)
		}
		vm, ok := refs[0].(*object.VirtualMachine)
		if !ok {
			return nil, "", fmt.Errorf("%q found %s, not a VM", id, refs[0].Reference())
		}
		var o mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"guest"}, &o); err != nil {
			return nil, "", err
		}
		hostName := ""
		if o.Guest != nil {
			hostName = o.Guest.HostName
		}
		if by == byIP {
			hostName = id
		}
		return vm, hostName, nil
	}
	return nil, "", ErrNoVMFound
}

// osNames is the part of the CPI's guest OS table (GuestOSLookup) for the
// guest IDs of vcsim's and Linux templates. The table has no Windows
// Server 2019 or later IDs (windows2019srv_64Guest, ...): the CPI calls
// their OS unknown, and so does this; so does it any ID it does not list,
// where the CPI's table may have a name.
var osNames = map[string]string{
	"otherGuest":        "other",
	"otherGuest64":      "other",
	"otherLinux64Guest": "linux",
	"otherLinuxGuest":   "linux",
	"ubuntu64Guest":     "ubuntu",
	"ubuntuGuest":       "ubuntu",
}

// describe is what DiscoverNode makes of the VM's properties.
func describe(o *mo.VirtualMachine, hostName string) (*nodeInfo, error) {
	if o.Guest == nil || o.Guest.HostName == "" {
		return nil, errors.New("VM Guest hostname is empty")
	}
	if len(o.Guest.Net) == 0 {
		return nil, errors.New("VM GuestNicInfo is empty")
	}
	addrs := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: o.Guest.HostName}}
	var ip string
	for _, nic := range o.Guest.Net {
		if nic.DeviceConfigId == -1 {
			continue // not a vNIC: an adapter the guest made
		}
		for _, a := range nic.IpAddress {
			p := net.ParseIP(a)
			if p == nil || p.To4() == nil || p.IsLoopback() || p.IsLinkLocalUnicast() || p.IsUnspecified() {
				continue
			}
			if ip == "" {
				ip = a
			}
		}
	}
	if ip == "" {
		return nil, errors.New("unable to find suitable IP address for node after filtering out localhost IPs")
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip})
	os, ok := osNames[o.Summary.Config.GuestId]
	if !ok {
		os = "unknown"
	}
	return &nodeInfo{
		uuid:      strings.ToLower(strings.TrimSpace(o.Summary.Config.Uuid)),
		nodeType:  fmt.Sprintf("vsphere-vm.cpu-%d.mem-%dgb.os-%s", o.Summary.Config.NumCpu, o.Summary.Config.MemorySizeMB/1024, os),
		addresses: addrs,
	}, nil
}

func (c *Cloud) cached(name string) *nodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[name]
}

func uuidOf(providerID string) string {
	return strings.ToLower(strings.TrimPrefix(providerID, ProviderName+"://"))
}

// byNodeName discovers a node by name and returns it from the cache under
// that name, which fails when the guest's host name differs from the node
// name in anything, case included.
func (c *Cloud) byNodeName(ctx context.Context, name k8stypes.NodeName) (*nodeInfo, error) {
	if _, err := c.discover(ctx, string(name), byName); err != nil {
		return nil, err
	}
	info := c.cached(string(name))
	if info == nil {
		return nil, fmt.Errorf("%w: a VM was found for node %s, but the host name VMware Tools reports differs from the node name (host names are case sensitive)", ErrNodeNotFound, name)
	}
	return info, nil
}

// NodeAddresses implements cloudprovider.Instances.
func (c *Cloud) NodeAddresses(ctx context.Context, name k8stypes.NodeName) ([]corev1.NodeAddress, error) {
	info, err := c.byNodeName(ctx, name)
	if err != nil {
		return nil, err
	}
	return info.addresses, nil
}

// NodeAddressesByProviderID implements cloudprovider.Instances.
func (c *Cloud) NodeAddressesByProviderID(ctx context.Context, providerID string) ([]corev1.NodeAddress, error) {
	info, err := c.discover(ctx, uuidOf(providerID), byUUID)
	if err != nil {
		return nil, ErrNodeNotFound
	}
	return info.addresses, nil
}

// InstanceID implements cloudprovider.Instances: the BIOS UUID.
func (c *Cloud) InstanceID(ctx context.Context, name k8stypes.NodeName) (string, error) {
	if info := c.cached(string(name)); info != nil {
		return info.uuid, nil
	}
	info, err := c.byNodeName(ctx, name)
	if err != nil {
		return "", err
	}
	return info.uuid, nil
}

// InstanceType implements cloudprovider.Instances.
func (c *Cloud) InstanceType(_ context.Context, name k8stypes.NodeName) (string, error) {
	if info := c.cached(string(name)); info != nil {
		return info.nodeType, nil
	}
	return "", fmt.Errorf("cannot find node with nodeName %s in nodeNameMap", name)
}

// InstanceTypeByProviderID implements cloudprovider.Instances.
func (c *Cloud) InstanceTypeByProviderID(ctx context.Context, providerID string) (string, error) {
	info, err := c.discover(ctx, uuidOf(providerID), byUUID)
	if err != nil {
		return "", err
	}
	return info.nodeType, nil
}

// AddSSHKeyToAllInstances implements cloudprovider.Instances.
func (c *Cloud) AddSSHKeyToAllInstances(context.Context, string, []byte) error {
	return cloudprovider.NotImplemented
}

// CurrentNodeName implements cloudprovider.Instances.
func (c *Cloud) CurrentNodeName(_ context.Context, hostname string) (k8stypes.NodeName, error) {
	return k8stypes.NodeName(hostname), nil
}

// InstanceExistsByProviderID implements cloudprovider.Instances: whether
// a VM has the BIOS UUID.
func (c *Cloud) InstanceExistsByProviderID(ctx context.Context, providerID string) (bool, error) {
	_, err := c.discover(ctx, uuidOf(providerID), byUUID)
	if errors.Is(err, ErrNoVMFound) {
		return false, nil
	}
	return err == nil, err
}

// InstanceShutdownByProviderID implements cloudprovider.Instances: whether
// the VM is not powered on.
func (c *Cloud) InstanceShutdownByProviderID(ctx context.Context, providerID string) (bool, error) {
	info, err := c.discover(ctx, uuidOf(providerID), byUUID)
	if err != nil {
		return false, err
	}
	state, err := info.vm.PowerState(ctx)
	if err != nil {
		return false, err
	}
	return state != types.VirtualMachinePowerStatePoweredOn, nil
}

// GetZone implements cloudprovider.Zones, as GetZoneByProviderID and
// GetZoneByNodeName do: without the configuration's labels section, which
// the simulation refuses, the CPI reports no zone.
func (c *Cloud) GetZone(context.Context) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{}, nil
}

// GetZoneByProviderID implements cloudprovider.Zones.
func (c *Cloud) GetZoneByProviderID(context.Context, string) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{}, nil
}

// GetZoneByNodeName implements cloudprovider.Zones.
func (c *Cloud) GetZoneByNodeName(context.Context, k8stypes.NodeName) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{}, nil
}

// Initialize implements cloudprovider.Interface.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer implements cloudprovider.Interface: not simulated.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }

// Instances implements cloudprovider.Interface.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return c, true }

// InstancesV2 implements cloudprovider.Interface: the CPI has none.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return nil, false }

// Zones implements cloudprovider.Interface.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return c, true }

// Clusters implements cloudprovider.Interface.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes implements cloudprovider.Interface: not simulated.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID implements cloudprovider.Interface.
func (c *Cloud) HasClusterID() bool { return true }
