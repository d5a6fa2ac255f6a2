package azuresim_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"

	"github.com/capwin/capwin/platform/azure/azuresim"
)

const (
	sub      = "00000000-0000-0000-0000-000000000001"
	rg       = "capwin-rg"
	location = "westeurope"
)

// fast polls without the SDK's 30 s default wait.
var fast = &runtime.PollUntilDoneOptions{Frequency: time.Millisecond}

// clients holds SDK clients against one simulated cloud.
type clients struct {
	groups  *armresources.ResourceGroupsClient
	vnets   *armnetwork.VirtualNetworksClient
	subnets *armnetwork.SubnetsClient
	nsgs    *armnetwork.SecurityGroupsClient
	nics    *armnetwork.InterfacesClient
	vms     *armcompute.VirtualMachinesClient
	disks   *armcompute.DisksClient
}

func newClients(t *testing.T, subscription string, o *arm.ClientOptions) clients {
	t.Helper()
	var cl clients
	var err error
	must := func(e error) {
		if e != nil {
			t.Fatal(e)
		}
	}
	cl.groups, err = armresources.NewResourceGroupsClient(subscription, azuresim.Credential(), o)
	must(err)
	cl.vnets, err = armnetwork.NewVirtualNetworksClient(subscription, azuresim.Credential(), o)
	must(err)
	cl.subnets, err = armnetwork.NewSubnetsClient(subscription, azuresim.Credential(), o)
	must(err)
	cl.nsgs, err = armnetwork.NewSecurityGroupsClient(subscription, azuresim.Credential(), o)
	must(err)
	cl.nics, err = armnetwork.NewInterfacesClient(subscription, azuresim.Credential(), o)
	must(err)
	cl.vms, err = armcompute.NewVirtualMachinesClient(subscription, azuresim.Credential(), o)
	must(err)
	cl.disks, err = armcompute.NewDisksClient(subscription, azuresim.Credential(), o)
	must(err)
	return cl
}

// network creates the resource group and a vnet 10.1.0.0/16 with subnet
// "nodes" 10.1.2.0/24, and returns the subnet ID.
func (cl clients) network(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cl.groups.CreateOrUpdate(ctx, rg, armresources.ResourceGroup{Location: to.Ptr(location)}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := cl.vnets.BeginCreateOrUpdate(ctx, rg, "vnet", vnet("10.1.0.0/16", subnet("nodes", "10.1.2.0/24")), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.PollUntilDone(ctx, fast)
	if err != nil {
		t.Fatal(err)
	}
	return deref(v.Properties.Subnets[0].ID)
}

// nic creates a NIC in subnetID and returns it once its create has ended.
func (cl clients) nic(t *testing.T, name, subnetID string) armnetwork.Interface {
	t.Helper()
	ctx := context.Background()
	p, err := cl.nics.BeginCreateOrUpdate(ctx, rg, name, nicBody(subnetID), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.PollUntilDone(ctx, fast)
	if err != nil {
		t.Fatal(err)
	}
	return n.Interface
}

// vm creates a VM and waits for its create to end.
func (cl clients) vm(t *testing.T, name string, body armcompute.VirtualMachine) {
	t.Helper()
	ctx := context.Background()
	p, err := cl.vms.BeginCreateOrUpdate(ctx, rg, name, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
}

func vnet(space string, subnets ...*armnetwork.Subnet) armnetwork.VirtualNetwork {
	return armnetwork.VirtualNetwork{
		Location: to.Ptr(location),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{to.Ptr(space)}},
			Subnets:      subnets,
		},
	}
}

func subnet(name, prefix string) *armnetwork.Subnet {
	return &armnetwork.Subnet{Name: to.Ptr(name), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr(prefix)}}
}

func nicBody(subnetID string) armnetwork.Interface {
	return armnetwork.Interface{
		Location: to.Ptr(location),
		Properties: &armnetwork.InterfacePropertiesFormat{
			EnableIPForwarding: to.Ptr(true),
			IPConfigurations: []*armnetwork.InterfaceIPConfiguration{{
				Name:       to.Ptr("ipconfig1"),
				Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: to.Ptr(subnetID)}},
			}},
		},
	}
}

// windowsVM is a valid Windows VM on the NIC with ID nicID; edit it with
// the functions given.
func windowsVM(nicID, customData string, edits ...func(*armcompute.VirtualMachine)) armcompute.VirtualMachine {
	vm := armcompute.VirtualMachine{
		Location: to.Ptr(location),
		Zones:    []*string{to.Ptr("1")},
		Properties: &armcompute.VirtualMachineProperties{
			HardwareProfile: &armcompute.HardwareProfile{VMSize: to.Ptr(armcompute.VirtualMachineSizeTypesStandardD2SV3)},
			LicenseType:     to.Ptr("Windows_Server"),
			OSProfile: &armcompute.OSProfile{
				ComputerName:         to.Ptr("win-abc12"),
				AdminUsername:        to.Ptr("capwin"),
				AdminPassword:        to.Ptr("Correct-Horse-9"),
				CustomData:           to.Ptr(base64.StdEncoding.EncodeToString([]byte(customData))),
				WindowsConfiguration: &armcompute.WindowsConfiguration{},
			},
			StorageProfile: &armcompute.StorageProfile{
				ImageReference: &armcompute.ImageReference{
					Publisher: to.Ptr("MicrosoftWindowsServer"), Offer: to.Ptr("WindowsServer"),
					SKU: to.Ptr("2022-datacenter-core"), Version: to.Ptr("latest"),
				},
			},
			NetworkProfile: &armcompute.NetworkProfile{NetworkInterfaces: []*armcompute.NetworkInterfaceReference{{ID: to.Ptr(nicID)}}},
		},
	}
	for _, e := range edits {
		e(&vm)
	}
	return vm
}

// wantError checks that err is an *azcore.ResponseError with this status and code.
func wantError(t *testing.T, err error, status int, code string) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v, want a *azcore.ResponseError %d %s", err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d %s, want %d %s (%v)", re.StatusCode, re.ErrorCode, status, code, err)
	}
	return re
}

func TestVMCreateWithPollsAndResume(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub, Polls: 2})
	var mu sync.Mutex
	var booted []armcompute.VirtualMachine
	done := make(chan struct{}, 4)
	c.OnVMCreated(func(vm armcompute.VirtualMachine) {
		mu.Lock()
		booted = append(booted, vm)
		mu.Unlock()
		done <- struct{}{}
	})
	cl := newClients(t, sub, c.ClientOptions())
	subnetID := cl.network(t)
	nic := cl.nic(t, "vm1-nic", subnetID)
	if got := deref(nic.Properties.IPConfigurations[0].Properties.PrivateIPAddress); got != "10.1.2.4" {
		t.Fatalf("first NIC got %s, want 10.1.2.4", got)
	}
	if nic2 := cl.nic(t, "vm2-nic", subnetID); deref(nic2.Properties.IPConfigurations[0].Properties.PrivateIPAddress) != "10.1.2.5" {
		t.Fatalf("second NIC got %s, want 10.1.2.5", deref(nic2.Properties.IPConfigurations[0].Properties.PrivateIPAddress))
	}

	poller, err := cl.vms.BeginCreateOrUpdate(ctx, rg, "vm1", windowsVM(deref(nic.ID), "<powershell>boot</powershell>"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if poller.Done() {
		t.Fatal("poller done after Begin, want 2 polls to go")
	}
	got, err := cl.vms.Get(ctx, rg, "vm1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := deref(got.Properties.ProvisioningState); s != "Creating" {
		t.Fatalf("provisioningState %s, want Creating", s)
	}
	if got.Properties.OSProfile.CustomData != nil || got.Properties.OSProfile.AdminPassword != nil {
		t.Fatal("GET returned customData or adminPassword")
	}
	if resp, err := poller.Poll(ctx); err != nil {
		t.Fatal(err)
	} else {
		_ = resp.Body.Close()
	}
	if poller.Done() {
		t.Fatal("poller done after one poll")
	}
	token, err := poller.ResumeToken()
	if err != nil {
		t.Fatal(err)
	}

	// A new client resumes the operation from the token and ends it.
	cl2 := newClients(t, sub, c.ClientOptions())
	resumed, err := cl2.vms.BeginCreateOrUpdate(ctx, rg, "vm1", armcompute.VirtualMachine{}, &armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions{ResumeToken: token})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := resumed.Poll(ctx); err != nil {
		t.Fatal(err)
	} else {
		_ = resp.Body.Close()
	}
	if !resumed.Done() {
		t.Fatal("resumed poller not done after the second poll")
	}
	res, err := resumed.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if deref(res.Properties.ProvisioningState) != "Succeeded" || deref(res.Properties.VMID) == "" {
		t.Fatalf("result state %s vmId %q", deref(res.Properties.ProvisioningState), deref(res.Properties.VMID))
	}

	got, err = cl.vms.Get(ctx, rg, "vm1", &armcompute.VirtualMachinesClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
	if err != nil {
		t.Fatal(err)
	}
	if s := deref(got.Properties.ProvisioningState); s != "Succeeded" {
		t.Fatalf("provisioningState %s, want Succeeded", s)
	}
	var codes []string
	for _, s := range got.Properties.InstanceView.Statuses {
		codes = append(codes, deref(s.Code))
	}
	if strings.Join(codes, ",") != "ProvisioningState/succeeded,PowerState/running" {
		t.Fatalf("instance view statuses %v", codes)
	}

	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("OnVMCreated not called")
	}
	time.Sleep(20 * time.Millisecond) // a second, wrong call would come now
	mu.Lock()
	if len(booted) != 1 {
		t.Fatalf("OnVMCreated called %d times, want 1", len(booted))
	}
	data, _ := base64.StdEncoding.DecodeString(deref(booted[0].Properties.OSProfile.CustomData))
	mu.Unlock()
	if string(data) != "<powershell>boot</powershell>" {
		t.Fatalf("OnVMCreated got customData %q", data)
	}

	if n := len(c.VirtualMachines()); n != 1 {
		t.Fatalf("%d VMs, want 1", n)
	}
	disks := c.Disks()
	if len(disks) != 1 || deref(disks[0].Properties.DiskSizeGB) != 127 || deref(disks[0].SKU.Name) != armcompute.DiskStorageAccountTypesPremiumLRS ||
		!strings.HasPrefix(deref(disks[0].Name), "vm1_OsDisk_1_") || len(deref(disks[0].Name)) != len("vm1_OsDisk_1_")+32 {
		t.Fatalf("OS disk %+v", disks)
	}
	nics := c.Interfaces()
	if vm := nics[0].Properties.VirtualMachine; vm == nil || !strings.EqualFold(deref(vm.ID), deref(got.ID)) {
		t.Fatalf("NIC virtualMachine %v, want %s", vm, deref(got.ID))
	}

	calls := c.Calls()
	if calls["VirtualMachinesClient.BeginCreateOrUpdate"] != 1 || calls["VirtualMachinesClient.BeginCreateOrUpdate:poll"] != 2 {
		t.Fatalf("calls %v, want 1 create and 2 polls", calls)
	}
}

func TestRejections(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub})
	cl := newClients(t, sub, c.ClientOptions())
	subnetID := cl.network(t)
	nic1 := deref(cl.nic(t, "nic1", subnetID).ID)
	nic2 := deref(cl.nic(t, "nic2", subnetID).ID)
	cl.vm(t, "vm1", windowsVM(nic1, "one"))

	putVM := func(name string, vm armcompute.VirtualMachine) error {
		_, err := cl.vms.BeginCreateOrUpdate(ctx, rg, name, vm, nil)
		return err
	}
	newVM := func(edit func(*armcompute.VirtualMachine)) func() error {
		return func() error { return putVM("vm2", windowsVM(nic2, "two", edit)) }
	}
	osProfile := func(f func(*armcompute.OSProfile)) func() error {
		return newVM(func(vm *armcompute.VirtualMachine) { f(vm.Properties.OSProfile) })
	}
	tests := []struct {
		name   string
		call   func() error
		status int
		code   string
	}{
		{"computerName longer than 15", osProfile(func(o *armcompute.OSProfile) { o.ComputerName = to.Ptr("a234567890123456") }), 400, "InvalidParameter"},
		{"computerName only digits", osProfile(func(o *armcompute.OSProfile) { o.ComputerName = to.Ptr("12345") }), 400, "InvalidParameter"},
		{"computerName with underscore", osProfile(func(o *armcompute.OSProfile) { o.ComputerName = to.Ptr("win_1") }), 400, "InvalidParameter"},
		{"computerName with period", osProfile(func(o *armcompute.OSProfile) { o.ComputerName = to.Ptr("win.1") }), 400, "InvalidParameter"},
		{"computerName missing", osProfile(func(o *armcompute.OSProfile) { o.ComputerName = nil }), 400, "InvalidParameter"},
		{"adminUsername missing", osProfile(func(o *armcompute.OSProfile) { o.AdminUsername = nil }), 400, "InvalidParameter"},
		{"adminUsername Administrator", osProfile(func(o *armcompute.OSProfile) { o.AdminUsername = to.Ptr("Administrator") }), 400, "InvalidParameter"},
		{"adminUsername support_388945a0", osProfile(func(o *armcompute.OSProfile) { o.AdminUsername = to.Ptr("SUPPORT_388945a0") }), 400, "InvalidParameter"},
		{"adminUsername longer than 20", osProfile(func(o *armcompute.OSProfile) { o.AdminUsername = to.Ptr("a23456789012345678901") }), 400, "InvalidParameter"},
		{"adminPassword missing", osProfile(func(o *armcompute.OSProfile) { o.AdminPassword = nil }), 400, "InvalidParameter"},
		{"adminPassword of 11 characters", osProfile(func(o *armcompute.OSProfile) { o.AdminPassword = to.Ptr("Abcdefghi1!") }), 400, "InvalidParameter"},
		{"adminPassword of two classes", osProfile(func(o *armcompute.OSProfile) { o.AdminPassword = to.Ptr("abcdefghijkl123") }), 400, "InvalidParameter"},
		{"adminPassword longer than 123", osProfile(func(o *armcompute.OSProfile) { o.AdminPassword = to.Ptr("Aa1" + strings.Repeat("x", 121)) }), 400, "InvalidParameter"},
		{"customData not base64", osProfile(func(o *armcompute.OSProfile) { o.CustomData = to.Ptr("not base64!") }), 400, "InvalidParameter"},
		{"customData over 65535 bytes, Azure's limit", osProfile(func(o *armcompute.OSProfile) {
			o.CustomData = to.Ptr(base64.StdEncoding.EncodeToString(make([]byte, 65535+1)))
		}), 400, "InvalidParameter"},
		{"two zones", newVM(func(vm *armcompute.VirtualMachine) { vm.Zones = []*string{to.Ptr("1"), to.Ptr("2")} }), 400, "InvalidParameter"},
		{"zone 4", newVM(func(vm *armcompute.VirtualMachine) { vm.Zones = []*string{to.Ptr("4")} }), 400, "InvalidParameter"},
		{"no image", newVM(func(vm *armcompute.VirtualMachine) { vm.Properties.StorageProfile.ImageReference = nil }), 400, "InvalidParameter"},
		{"image without version", newVM(func(vm *armcompute.VirtualMachine) { vm.Properties.StorageProfile.ImageReference.Version = nil }), 400, "InvalidParameter"},
		{"no location", newVM(func(vm *armcompute.VirtualMachine) { vm.Location = nil }), 400, "LocationRequired"},
		{"NIC missing", newVM(func(vm *armcompute.VirtualMachine) {
			vm.Properties.NetworkProfile.NetworkInterfaces[0].ID = to.Ptr(strings.Replace(nic2, "nic2", "nic9", 1))
		}), 400, "NotFound"},
		{"NIC in another location", newVM(func(vm *armcompute.VirtualMachine) { vm.Location = to.Ptr("northeurope") }), 400, "InvalidResourceReference"},
		{"NIC used by another VM", func() error { return putVM("vm2", windowsVM(nic1, "two")) }, 400, "NicInUse"},
		{"VM in missing group", func() error {
			_, err := cl.vms.BeginCreateOrUpdate(ctx, "nope", "vm2", windowsVM(nic2, "two"), nil)
			return err
		}, 404, "ResourceGroupNotFound"},
		{"update changes customData", func() error { return putVM("vm1", windowsVM(nic1, "changed")) }, 409, "PropertyChangeNotAllowed"},
		{"update changes computerName", func() error {
			return putVM("vm1", windowsVM(nic1, "one", func(vm *armcompute.VirtualMachine) { vm.Properties.OSProfile.ComputerName = to.Ptr("win-other") }))
		}, 409, "PropertyChangeNotAllowed"},
		{"update changes adminUsername", func() error {
			return putVM("vm1", windowsVM(nic1, "one", func(vm *armcompute.VirtualMachine) { vm.Properties.OSProfile.AdminUsername = to.Ptr("someone") }))
		}, 409, "PropertyChangeNotAllowed"},
		{"subnet outside the vnet", func() error {
			_, err := cl.subnets.BeginCreateOrUpdate(ctx, rg, "vnet", "outside", *subnet("outside", "10.2.0.0/24"), nil)
			return err
		}, 400, "NetcfgInvalidSubnet"},
		{"subnets overlap", func() error {
			_, err := cl.subnets.BeginCreateOrUpdate(ctx, rg, "vnet", "overlap", *subnet("overlap", "10.1.2.128/25"), nil)
			return err
		}, 400, "NetcfgSubnetRangesOverlap"},
		{"inline subnets overlap", func() error {
			_, err := cl.vnets.BeginCreateOrUpdate(ctx, rg, "vnet2", vnet("10.5.0.0/16", subnet("a", "10.5.0.0/23"), subnet("b", "10.5.1.0/24")), nil)
			return err
		}, 400, "NetcfgSubnetRangesOverlap"},
		{"subnet refers to a missing NSG", func() error {
			s := subnet("guarded", "10.1.3.0/24")
			s.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr("/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/networkSecurityGroups/missing")}
			_, err := cl.subnets.BeginCreateOrUpdate(ctx, rg, "vnet", "guarded", *s, nil)
			return err
		}, 400, "InvalidResourceReference"},
		{"NIC in a missing subnet", func() error {
			_, err := cl.nics.BeginCreateOrUpdate(ctx, rg, "nic3", nicBody(subnetID+"x"), nil)
			return err
		}, 400, "InvalidResourceReference"},
		{"NIC in a missing group", func() error {
			_, err := cl.nics.BeginCreateOrUpdate(ctx, "nope", "nic3", nicBody(subnetID), nil)
			return err
		}, 404, "ResourceGroupNotFound"},
		{"delete a subnet in use", func() error {
			_, err := cl.subnets.BeginDelete(ctx, rg, "vnet", "nodes", nil)
			return err
		}, 400, "InUseSubnetCannotBeDeleted"},
		{"delete a vnet in use", func() error {
			_, err := cl.vnets.BeginDelete(ctx, rg, "vnet", nil)
			return err
		}, 400, "InUseSubnetCannotBeDeleted"},
		{"vnet update drops a subnet in use", func() error {
			_, err := cl.vnets.BeginCreateOrUpdate(ctx, rg, "vnet", vnet("10.1.0.0/16"), nil)
			return err
		}, 400, "InUseSubnetCannotBeDeleted"},
		{"delete a NIC in use", func() error {
			_, err := cl.nics.BeginDelete(ctx, rg, "nic1", nil)
			return err
		}, 400, "NicInUse"},
		{"delete an attached disk", func() error {
			d := c.Disks()[0]
			_, err := cl.disks.BeginDelete(ctx, rg, deref(d.Name), nil)
			return err
		}, 409, "OperationNotAllowed"},
		{"get a missing VM", func() error {
			_, err := cl.vms.Get(ctx, rg, "vm9", nil)
			return err
		}, 404, "ResourceNotFound"},
		{"get a missing group", func() error {
			_, err := cl.groups.Get(ctx, "nope", nil)
			return err
		}, 404, "ResourceGroupNotFound"},
		{"delete a missing group", func() error {
			_, err := cl.groups.BeginDelete(ctx, "nope", nil)
			return err
		}, 404, "ResourceGroupNotFound"},
		{"group moves location", func() error {
			_, err := cl.groups.CreateOrUpdate(ctx, rg, armresources.ResourceGroup{Location: to.Ptr("eastus")}, nil)
			return err
		}, 409, "InvalidResourceGroupLocation"},
		{"another subscription", func() error {
			other := newClients(t, "00000000-0000-0000-0000-000000000002", c.ClientOptions())
			_, err := other.groups.Get(ctx, rg, nil)
			return err
		}, 404, "SubscriptionNotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re := wantError(t, tt.call(), tt.status, tt.code)
			if tt.code == "InvalidParameter" || tt.code == "PropertyChangeNotAllowed" {
				// The message or target names the field, as Azure's does.
				body, _ := readBody(re.RawResponse)
				if !strings.Contains(body, `"target"`) {
					t.Fatalf("error body %s names no target", body)
				}
			}
		})
	}
	if n := len(c.VirtualMachines()); n != 1 {
		t.Fatalf("%d VMs after rejected writes, want 1", n)
	}
}

func TestChangeNotAllowedMessage(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub})
	cl := newClients(t, sub, c.ClientOptions())
	nic := deref(cl.nic(t, "nic1", cl.network(t)).ID)
	cl.vm(t, "vm1", windowsVM(nic, "one"))
	_, err := cl.vms.BeginCreateOrUpdate(ctx, rg, "vm1", windowsVM(nic, "two"), nil)
	re := wantError(t, err, 409, "PropertyChangeNotAllowed")
	if body, _ := readBody(re.RawResponse); !strings.Contains(body, "Changing property 'customData' is not allowed.") {
		t.Fatalf("body %s", body)
	}
	// An update that leaves customData out (as a GET returns it) is no change.
	got, err := cl.vms.Get(ctx, rg, "vm1", nil)
	if err != nil {
		t.Fatal(err)
	}
	got.Tags = map[string]*string{"k": to.Ptr("v")}
	p, err := cl.vms.BeginCreateOrUpdate(ctx, rg, "vm1", got.VirtualMachine, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
	if vm := c.VirtualMachines()[0]; deref(vm.Properties.OSProfile.CustomData) != base64.StdEncoding.EncodeToString([]byte("one")) || deref(vm.Tags["k"]) != "v" {
		t.Fatalf("after update: customData %q tags %v", deref(vm.Properties.OSProfile.CustomData), vm.Tags)
	}
}

// TestIfNoneMatchRefusesAnOverwrite: a create sent with If-None-Match: *
// on a VM that exists is refused with 412, as ARM does.
func TestIfNoneMatchRefusesAnOverwrite(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub})
	cl := newClients(t, sub, c.ClientOptions())
	nic := deref(cl.nic(t, "nic1", cl.network(t)).ID)
	cl.vm(t, "vm1", windowsVM(nic, "one"))
	_, err := cl.vms.BeginCreateOrUpdate(ctx, rg, "vm1", windowsVM(nic, "one"), &armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions{IfNoneMatch: to.Ptr("*")})
	_ = wantError(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
}

func TestDeleteOptions(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub, Polls: 1})
	cl := newClients(t, sub, c.ClientOptions())
	subnetID := cl.network(t)
	keep := deref(cl.nic(t, "keep-nic", subnetID).ID)
	drop := deref(cl.nic(t, "drop-nic", subnetID).ID)
	cl.vm(t, "keep", windowsVM(keep, "k"))
	cl.vm(t, "drop", windowsVM(drop, "d", func(vm *armcompute.VirtualMachine) {
		vm.Properties.OSProfile.ComputerName = to.Ptr("drop")
		vm.Properties.StorageProfile.OSDisk = &armcompute.OSDisk{Name: to.Ptr("drop-os"), DeleteOption: to.Ptr(armcompute.DiskDeleteOptionTypesDelete)}
		vm.Properties.NetworkProfile.NetworkInterfaces[0].Properties = &armcompute.NetworkInterfaceReferenceProperties{DeleteOption: to.Ptr(armcompute.DeleteOptionsDelete)}
	}))
	if n := len(c.Disks()); n != 2 {
		t.Fatalf("%d disks, want 2", n)
	}

	for _, name := range []string{"keep", "drop"} {
		p, err := cl.vms.BeginDelete(ctx, rg, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := cl.vms.Get(ctx, rg, name, nil); err != nil || deref(got.Properties.ProvisioningState) != "Deleting" {
			t.Fatalf("during delete: %v, state %v", err, got.Properties)
		}
		if _, err := p.PollUntilDone(ctx, fast); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.VirtualMachines()); n != 0 {
		t.Fatalf("%d VMs left", n)
	}
	nics := c.Interfaces()
	if len(nics) != 1 || deref(nics[0].Name) != "keep-nic" || nics[0].Properties.VirtualMachine != nil {
		t.Fatalf("NICs after delete: %d, want only keep-nic, detached", len(nics))
	}
	disks := c.Disks()
	if len(disks) != 1 || !strings.HasPrefix(deref(disks[0].Name), "keep_OsDisk_1_") || disks[0].ManagedBy != nil ||
		deref(disks[0].Properties.DiskState) != armcompute.DiskStateUnattached {
		t.Fatalf("disks after delete: %d, want only keep's, unattached", len(disks))
	}

	// The orphans can be deleted now, and a delete of something gone ends at once.
	p, err := cl.nics.BeginDelete(ctx, rg, "keep-nic", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
	gone, err := cl.vms.BeginDelete(ctx, rg, "never-was", nil)
	if err != nil || !gone.Done() {
		t.Fatalf("delete of a missing VM: %v, done %v", err, gone != nil && gone.Done())
	}
}

func TestFaultRetryAfterBeyondSDKLimit(t *testing.T) {
	c := azuresim.New(azuresim.Options{SubscriptionID: sub})
	c.SetFault(func(req *http.Request) *http.Response {
		h := http.Header{}
		h.Set("Retry-After", "120")
		return &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Header: h}
	})
	cl := newClients(t, sub, c.ClientOptions())
	start := time.Now()
	_, err := cl.groups.Get(context.Background(), rg, nil)
	re := wantError(t, err, http.StatusTooManyRequests, "")
	if got := re.RawResponse.Header.Get("Retry-After"); got != "120" {
		t.Fatalf("Retry-After %q", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s: the SDK should give up at once", d)
	}
	c.SetFault(nil)
	if _, err := cl.groups.Get(context.Background(), rg, nil); err == nil {
		t.Fatal("group exists without being created")
	}
}

func TestWritesPerSecond(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub, WritesPerSecond: 5, WriteBurst: 5})
	o := c.ClientOptions()
	o.Retry = policy.RetryOptions{MaxRetries: -1}
	cl := newClients(t, sub, o)
	subnetID := cl.network(t) // two writes

	var ok, throttled int
	for i := range 20 {
		p, err := cl.nics.BeginCreateOrUpdate(ctx, rg, "nic"+strconv.Itoa(i), nicBody(subnetID), nil)
		if err != nil {
			re := wantError(t, err, http.StatusTooManyRequests, "TooManyRequests")
			if s, _ := strconv.Atoi(re.RawResponse.Header.Get("Retry-After")); s < 1 {
				t.Fatalf("Retry-After %q", re.RawResponse.Header.Get("Retry-After"))
			}
			throttled++
			continue
		}
		if !p.Done() {
			t.Fatal("create with Polls 0 not done")
		}
		ok++
	}
	if ok == 0 || throttled == 0 {
		t.Fatalf("%d created, %d throttled: want some of each", ok, throttled)
	}
	if n := len(c.Interfaces()); n != ok {
		t.Fatalf("%d NICs for %d successful creates", n, ok)
	}
	if w := c.Writes(); w != ok+2 {
		t.Fatalf("Writes() %d, want %d", w, ok+2)
	}
	if n := c.Calls()["InterfacesClient.BeginCreateOrUpdate"]; n != 20 {
		t.Fatalf("Calls counted %d NIC creates, want 20", n)
	}
}

func TestNICUpdateKeepsAddressAndGroupDelete(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub, Polls: 1})
	cl := newClients(t, sub, c.ClientOptions())
	subnetID := cl.network(t)
	first := cl.nic(t, "a", subnetID)
	cl.nic(t, "b", subnetID)
	// Deleting a frees .4; an update of b keeps .5 all the same.
	body := nicBody(subnetID)
	body.Properties.EnableIPForwarding = to.Ptr(false)
	p, err := cl.nics.BeginCreateOrUpdate(ctx, rg, "B", body, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.PollUntilDone(ctx, fast)
	if err != nil {
		t.Fatal(err)
	}
	if ip := deref(got.Properties.IPConfigurations[0].Properties.PrivateIPAddress); ip != "10.1.2.5" || deref(got.Properties.EnableIPForwarding) {
		t.Fatalf("updated NIC has %s, forwarding %v", ip, deref(got.Properties.EnableIPForwarding))
	}
	if deref(first.Properties.IPConfigurations[0].Properties.PrivateIPAddress) != "10.1.2.4" {
		t.Fatal("first NIC not .4")
	}
	pager := cl.nics.NewListPager(rg, nil)
	var listed int
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed += len(page.Value)
	}
	if listed != 2 {
		t.Fatalf("listed %d NICs, want 2", listed)
	}

	dp, err := cl.groups.BeginDelete(ctx, rg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.ResourceGroups(); len(g) != 1 || deref(g[0].Properties.ProvisioningState) != "Deleting" {
		t.Fatal("group not shown as Deleting")
	}
	if _, err := cl.nics.BeginCreateOrUpdate(ctx, rg, "c", nicBody(subnetID), nil); err == nil {
		t.Fatal("create in a group being deleted succeeded")
	}
	if _, err := dp.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
	if len(c.ResourceGroups()) != 0 || len(c.Interfaces()) != 0 {
		t.Fatal("group delete left resources")
	}
	if calls := c.Calls(); calls["ResourceGroupsClient.BeginDelete:poll"] != 1 {
		t.Fatalf("calls %v", calls)
	}
}

// TestSubnetAddresses: a NIC gets the lowest free address of its subnet
// past the five Azure reserves (the network address, the next three, and
// the broadcast address), and a subnet with host bits set is refused.
func TestSubnetAddresses(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub})
	cl := newClients(t, sub, c.ClientOptions())
	cl.network(t)
	p, err := cl.subnets.BeginCreateOrUpdate(ctx, rg, "vnet", "small", *subnet("small", "10.1.0.16/29"), nil)
	if err != nil {
		t.Fatal(err)
	}
	small, err := p.PollUntilDone(ctx, fast)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"10.1.0.20", "10.1.0.21", "10.1.0.22"} {
		n := cl.nic(t, "small-"+strconv.Itoa(i), deref(small.ID))
		if got := deref(n.Properties.IPConfigurations[0].Properties.PrivateIPAddress); got != want {
			t.Errorf("NIC %d in 10.1.0.16/29 got %s, want %s", i, got, want)
		}
	}
	_, err = cl.nics.BeginCreateOrUpdate(ctx, rg, "small-3", nicBody(deref(small.ID)), nil)
	_ = wantError(t, err, 400, "SubnetIsFull")

	_, err = cl.subnets.BeginCreateOrUpdate(ctx, rg, "vnet", "unmasked", *subnet("unmasked", "10.1.5.5/24"), nil)
	_ = wantError(t, err, 400, "InvalidCIDRNotation")
}

func readBody(resp *http.Response) (string, error) {
	b, err := runtime.Payload(resp)
	return string(b), err
}

func TestConcurrentNICCreatesGetDistinctAddresses(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub, Polls: 1})
	cl := newClients(t, sub, c.ClientOptions())
	subnetID := cl.network(t)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Go(func() {
			p, err := cl.nics.BeginCreateOrUpdate(ctx, rg, "nic"+strconv.Itoa(i), nicBody(subnetID), nil)
			if err == nil {
				_, err = p.PollUntilDone(ctx, fast)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, n := range c.Interfaces() {
		ip := deref(n.Properties.IPConfigurations[0].Properties.PrivateIPAddress)
		if seen[ip] || deref(n.Properties.ProvisioningState) != armnetwork.ProvisioningStateSucceeded {
			t.Fatalf("NIC %s: address %s seen before: %v, state %s", deref(n.Name), ip, seen[ip], deref(n.Properties.ProvisioningState))
		}
		seen[ip] = true
	}
	if len(seen) != 10 {
		t.Fatalf("%d NICs, want 10", len(seen))
	}
}

// TestLoadBalancerAndPublicIP: a load balancer's frontend takes a public
// IP address, which cannot then be deleted; a NIC joins an existing pool
// only, and while it is in it the load balancer cannot go; once it left,
// the load balancer and then its address can.
func TestLoadBalancerAndPublicIP(t *testing.T) {
	ctx := context.Background()
	c := azuresim.New(azuresim.Options{SubscriptionID: sub, Polls: 1})
	cl := newClients(t, sub, c.ClientOptions())
	subnetID := cl.network(t)
	pips, err := armnetwork.NewPublicIPAddressesClient(sub, azuresim.Credential(), c.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	lbs, err := armnetwork.NewLoadBalancersClient(sub, azuresim.Credential(), c.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	standard := &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard)}
	pp, err := pips.BeginCreateOrUpdate(ctx, rg, "pip", armnetwork.PublicIPAddress{Location: to.Ptr(location), SKU: standard}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pip, err := pp.PollUntilDone(ctx, fast)
	if err != nil {
		t.Fatal(err)
	}
	if deref(pip.Properties.IPAddress) == "" {
		t.Fatal("the public IP address has no address")
	}
	lbID := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/loadBalancers/lb"
	body := func(pipID, poolRef string) armnetwork.LoadBalancer {
		return armnetwork.LoadBalancer{
			Location: to.Ptr(location),
			SKU:      &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard)},
			Properties: &armnetwork.LoadBalancerPropertiesFormat{
				FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{Name: to.Ptr("fe"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{PublicIPAddress: &armnetwork.PublicIPAddress{ID: to.Ptr(pipID)}}}},
				BackendAddressPools:      []*armnetwork.BackendAddressPool{{Name: to.Ptr("pool")}},
				LoadBalancingRules: []*armnetwork.LoadBalancingRule{{Name: to.Ptr("r"), Properties: &armnetwork.LoadBalancingRulePropertiesFormat{
					Protocol:                to.Ptr(armnetwork.TransportProtocolTCP),
					FrontendPort:            to.Ptr[int32](6443),
					BackendPort:             to.Ptr[int32](6443),
					DisableOutboundSnat:     to.Ptr(true),
					FrontendIPConfiguration: &armnetwork.SubResource{ID: to.Ptr(lbID + "/frontendIPConfigurations/fe")},
					BackendAddressPool:      &armnetwork.SubResource{ID: to.Ptr(lbID + "/backendAddressPools/" + poolRef)},
				}}},
				OutboundRules: []*armnetwork.OutboundRule{{Name: to.Ptr("out"), Properties: &armnetwork.OutboundRulePropertiesFormat{
					Protocol:                 to.Ptr(armnetwork.LoadBalancerOutboundRuleProtocolAll),
					FrontendIPConfigurations: []*armnetwork.SubResource{{ID: to.Ptr(lbID + "/frontendIPConfigurations/fe")}},
					BackendAddressPool:       &armnetwork.SubResource{ID: to.Ptr(lbID + "/backendAddressPools/pool")},
				}}},
			},
		}
	}
	// Refused as Azure refuses them.
	basic, err := pips.BeginCreateOrUpdate(ctx, rg, "basic-pip", armnetwork.PublicIPAddress{Location: to.Ptr(location)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	basicIP, err := basic.PollUntilDone(ctx, fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lbs.BeginCreateOrUpdate(ctx, rg, "lb", body(deref(basicIP.ID), "pool"), nil)
	_ = wantError(t, err, 400, "PublicIPAndLBSkuDoNotMatch")
	snat := body(deref(pip.ID), "pool")
	snat.Properties.LoadBalancingRules[0].Properties.DisableOutboundSnat = nil
	_, err = lbs.BeginCreateOrUpdate(ctx, rg, "lb", snat, nil)
	_ = wantError(t, err, 400, "LoadBalancingRuleMustDisableSNATSinceSameFrontendIPConfigurationIsReferencedByOutboundRule")
	_, err = lbs.BeginCreateOrUpdate(ctx, rg, strings.Repeat("l", 81), body(deref(pip.ID), "pool"), nil)
	_ = wantError(t, err, 400, "InvalidResourceName")
	_, err = cl.nsgs.BeginCreateOrUpdate(ctx, rg, "nsg", armnetwork.SecurityGroup{Location: to.Ptr(location), Properties: &armnetwork.SecurityGroupPropertiesFormat{
		SecurityRules: []*armnetwork.SecurityRule{{Name: to.Ptr("r"), Properties: &armnetwork.SecurityRulePropertiesFormat{
			Priority: to.Ptr[int32](50), Direction: to.Ptr(armnetwork.SecurityRuleDirectionInbound), Access: to.Ptr(armnetwork.SecurityRuleAccessAllow), Protocol: to.Ptr(armnetwork.SecurityRuleProtocolTCP),
		}}},
	}}, nil)
	_ = wantError(t, err, 400, "SecurityRuleInvalidPriority")

	_, err = lbs.BeginCreateOrUpdate(ctx, rg, "lb", body(deref(pip.ID)+"x", "pool"), nil)
	_ = wantError(t, err, 400, "InvalidResourceReference")
	_, err = lbs.BeginCreateOrUpdate(ctx, rg, "lb", body(deref(pip.ID), "other"), nil)
	_ = wantError(t, err, 400, "InvalidResourceReference")
	lp, err := lbs.BeginCreateOrUpdate(ctx, rg, "lb", body(deref(pip.ID), "pool"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lp.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
	_, err = pips.BeginDelete(ctx, rg, "pip", nil)
	_ = wantError(t, err, 400, "PublicIPAddressCannotBeDeleted")

	nic := nicBody(subnetID)
	nic.Properties.IPConfigurations[0].Properties.LoadBalancerBackendAddressPools = []*armnetwork.BackendAddressPool{{ID: to.Ptr(lbID + "/backendAddressPools/nope")}}
	_, err = cl.nics.BeginCreateOrUpdate(ctx, rg, "nic1", nic, nil)
	_ = wantError(t, err, 400, "InvalidResourceReference")
	nic.Properties.IPConfigurations[0].Properties.LoadBalancerBackendAddressPools[0].ID = to.Ptr(lbID + "/backendAddressPools/pool")
	np, err := cl.nics.BeginCreateOrUpdate(ctx, rg, "nic1", nic, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := np.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
	if members := c.LoadBalancers()[0].Properties.BackendAddressPools[0].Properties.BackendIPConfigurations; len(members) != 1 {
		t.Fatalf("the pool lists %d IP configurations, want nic1's", len(members))
	}
	_, err = lbs.BeginDelete(ctx, rg, "lb", nil)
	_ = wantError(t, err, 400, "InUseBackendAddressPoolCannotBeDeleted")

	dn, err := cl.nics.BeginDelete(ctx, rg, "nic1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dn.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
	dl, err := lbs.BeginDelete(ctx, rg, "lb", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dl.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
	dp, err := pips.BeginDelete(ctx, rg, "pip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dp.PollUntilDone(ctx, fast); err != nil {
		t.Fatal(err)
	}
}

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
