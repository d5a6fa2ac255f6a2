package sim

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"k8s.io/utils/ptr"

	nodesim "github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/platform/azure/azuresim"
)

// The simulated Azure subscription and where the simulation's images are.
const (
	AzureSubscription = "00000000-1111-2222-3333-444444444444"
	AzureLocation     = "westeurope"
	// AzureImageGroup and AzureGallery hold the images the simulated
	// guests know (azureImages): capwin's Windows images as images/azure
	// names them, and a Linux image for the control plane.
	AzureImageGroup = "capwin-images"
	AzureGallery    = "capwin"
	// AzureLinuxImage is the Linux image definition of the gallery.
	AzureLinuxImage = "ubuntu-2404-kubeadm"
)

// AzureControlPlaneEndpointIP is the first public IP address the
// simulated Azure hands out: the address of the first cluster's API server
// load balancer. The simulated network routes it to the workload API
// server, whose serving certificate names it, as the load balancer reaches
// a control-plane node's API server. A second Azure cluster in one
// simulation gets another address, which the certificate does not name.
const AzureControlPlaneEndpointIP = "20.0.0.1"

// azureVM is an Azure VM with what its guest finds on its network: the
// private address Azure's DHCP gives its primary network interface.
type azureVM struct {
	vm *armcompute.VirtualMachine
	ip string
}

// azureVMs is the simulated Azure's VMs. A VM is running once its create
// has ended (the simulation has no stopped state).
type azureVMs struct {
	cloud *azuresim.Cloud
}

func (a azureVMs) VMs(context.Context) ([]cloudVM, error) {
	nics := map[string]*armnetwork.Interface{}
	for _, n := range a.cloud.Interfaces() {
		nics[strings.ToLower(ptr.Deref(n.ID, ""))] = &n
	}
	vms := a.cloud.VirtualMachines()
	out := make([]cloudVM, 0, len(vms))
	for i := range vms {
		vm := &vms[i]
		running := false
		if p := vm.Properties; p != nil && p.InstanceView != nil {
			for _, st := range p.InstanceView.Statuses {
				running = running || ptr.Deref(st.Code, "") == "PowerState/running"
			}
		}
		av := &azureVM{vm: vm}
		if p := vm.Properties; p != nil && p.NetworkProfile != nil {
			for _, ref := range p.NetworkProfile.NetworkInterfaces {
				if ref.Properties != nil && !ptr.Deref(ref.Properties.Primary, false) && len(p.NetworkProfile.NetworkInterfaces) > 1 {
					continue
				}
				if n := nics[strings.ToLower(ptr.Deref(ref.ID, ""))]; n != nil && n.Properties != nil && len(n.Properties.IPConfigurations) > 0 {
					if ipc := n.Properties.IPConfigurations[0].Properties; ipc != nil {
						av.ip = ptr.Deref(ipc.PrivateIPAddress, "")
					}
				}
				break
			}
		}
		out = append(out, cloudVM{ID: strings.ToLower(ptr.Deref(vm.ID, "")), Name: ptr.Deref(vm.Name, ""), PoweredOn: running, azure: av})
	}
	return out, nil
}

func (azureVMs) Close() {}

// bootAzure is an Azure VM's first boot: the guest takes osProfile's
// computer name and its network interface's private address (Azure's
// DHCP), and its software reads the customData (cloudbase-init's Azure
// service on Windows, cloud-init on Linux); its image decides its
// operating system (azureImages). nil for a VM without customData.
func (g *Guests) bootAzure(gs *guest, av *azureVM) (*firstBoot, error) {
	p := av.vm.Properties
	if p == nil || p.OSProfile == nil || ptr.Deref(p.OSProfile.CustomData, "") == "" {
		return nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(*p.OSProfile.CustomData)
	if err != nil {
		return nil, fmt.Errorf("osProfile.customData is not base64: %w", err)
	}
	gs.customData = data
	name := ptr.Deref(p.OSProfile.ComputerName, "")
	if name == "" {
		return nil, errors.New("osProfile.computerName is empty")
	}
	if av.ip == "" {
		return nil, errors.New("the VM's network interface has no private address")
	}
	var ref *armcompute.ImageReference
	if p.StorageProfile != nil {
		ref = p.StorageProfile.ImageReference
	}
	build, err := azureImageBuild(ref)
	if err != nil {
		return nil, err
	}
	windows := p.OSProfile.WindowsConfiguration != nil
	if windows != (build != "") {
		// Azure's provisioning fails (OSProvisioningClientError) when the
		// osProfile is for another OS than the image's.
		return nil, fmt.Errorf("the image is for %s but osProfile configures %s", osName(build != ""), osName(windows))
	}
	// Its SMBIOS UUID is left out: how it relates to the VM's vmId is not
	// something the simulation claims.
	return &firstBoot{hostName: name, ip: av.ip, build: build, hardware: nodesim.AzureVM}, nil
}

func osName(windows bool) string {
	if windows {
		return "Windows"
	}
	return "Linux"
}

// galleryImage matches a Compute Gallery image version's ID.
var galleryImage = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Compute/galleries/([^/]+)/images/([^/]+)/versions/([^/]+)$`)

// windowsImage matches the image definitions images/azure makes:
// capwin-windows-<release>, with -hyperv for the Hyper-V isolation ones.
var windowsImage = regexp.MustCompile(`^capwin-windows-(2019|2022|2025)(-hyperv)?$`)

// azureReleaseBuilds is the Windows build of each Windows Server release.
var azureReleaseBuilds = map[string]string{"2019": "10.0.17763", "2022": "10.0.20348", "2025": "10.0.26100"}

// azureImageBuild is the Windows build of an image the simulation knows
// (capwin's Windows images in the simulation's gallery, or a Marketplace
// WindowsServer SKU), "" for its Linux image, and an error for any other:
// a real image has an OS, and the simulation does not guess it.
func azureImageBuild(ref *armcompute.ImageReference) (string, error) {
	if ref == nil {
		return "", errors.New("the VM has no image reference")
	}
	// The gallery holds one version of each image: the Kubernetes version
	// the simulation runs, without the v, as images/azure numbers them.
	if m := galleryImage.FindStringSubmatch(ptr.Deref(ref.ID, "")); m != nil && strings.EqualFold(m[1], AzureImageGroup) && strings.EqualFold(m[2], AzureGallery) && m[4] == strings.TrimPrefix(KubernetesVersion, "v") {
		if m[3] == AzureLinuxImage {
			return "", nil
		}
		if w := windowsImage.FindStringSubmatch(m[3]); w != nil {
			return azureReleaseBuilds[w[1]], nil
		}
	}
	if strings.EqualFold(ptr.Deref(ref.Publisher, ""), "MicrosoftWindowsServer") && strings.EqualFold(ptr.Deref(ref.Offer, ""), "WindowsServer") {
		release, _, _ := strings.Cut(ptr.Deref(ref.SKU, ""), "-")
		if b, ok := azureReleaseBuilds[release]; ok {
			return b, nil
		}
	}
	return "", fmt.Errorf("image %s: the simulation knows no such image (it knows version %s of the gallery %s/%s's %s and capwin-windows-<release> images, and Marketplace WindowsServer SKUs)",
		imageName(ref), strings.TrimPrefix(KubernetesVersion, "v"), AzureImageGroup, AzureGallery, AzureLinuxImage)
}

func imageName(ref *armcompute.ImageReference) string {
	if id := ptr.Deref(ref.ID, ""); id != "" {
		return id
	}
	return strings.Join([]string{ptr.Deref(ref.Publisher, ""), ptr.Deref(ref.Offer, ""), ptr.Deref(ref.SKU, ""), ptr.Deref(ref.Version, "")}, ":")
}
