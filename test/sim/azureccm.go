package sim

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	nodecontroller "k8s.io/cloud-provider/controllers/node"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/platform/azure/azuresim"
)

// cloudNodeManagerImage is the image of cloud-provider-azure's
// cloud-node-manager, whose DaemonSets' pods this plays.
const cloudNodeManagerImage = "azure-cloud-node-manager"

// azureNodeManager plays the pods of cloud-provider-azure's
// cloud-node-manager DaemonSets (one for Linux nodes, one for Windows
// nodes), which initialise each Node from the Azure Instance Metadata
// Service of the VM they run on: provider ID, addresses, instance type,
// region and zone, then they remove the uninitialised taint. envtest runs
// no scheduler and no kubelet: a Node is initialised only when a
// DaemonSet with the cloud-node-manager image may run on it (node selector
// and tolerations, as the vSphere CPI's), as that DaemonSet's
// ServiceAccount, whose RBAC the flavor gives.
//
// It runs Kubernetes' cloud node controller (k8s.io/cloud-provider), of
// which cloud-node-manager's is a copy, with an InstancesV2 that answers
// what cloud-node-manager reads from the Instance Metadata Service of the
// node's own VM (the one whose guest registered it; cloud-node-manager
// knows its node by the NODE_NAME its pod is given). A pod whose ConfigMap
// or Secret volumes are missing does not start, and its node stays
// uninitialised. The cloud controller manager (routes, load balancers,
// node lifecycle), which needs the node name to be the VM name, is not
// simulated, nor is --wait-routes. Kubernetes' controller also sets the
// deprecated beta topology labels, which cloud-node-manager sets only with
// --enable-deprecated-beta-topology-labels.
type azureNodeManager struct {
	addonPod
	workload client.Client
	config   *rest.Config
	cloud    *azuresim.Cloud
	guests   *Guests

	// serviceAccount is the one the node controller runs as.
	serviceAccount string
}

func (m *azureNodeManager) run(ctx context.Context) { m.addonPod.run(ctx, m.start) }

// daemonSets are the DaemonSets that run cloud-node-manager; an error
// names one whose pod would not run it as the simulation plays it.
func (m *azureNodeManager) daemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	all := &appsv1.DaemonSetList{}
	if err := m.workload.List(ctx, all, client.InNamespace(cpiNamespace)); err != nil {
		return nil, err
	}
	var out []appsv1.DaemonSet
	for _, ds := range all.Items {
		spec := &ds.Spec.Template.Spec
		i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool {
			return strings.Contains(c.Image, "/"+cloudNodeManagerImage+":")
		})
		if i < 0 {
			continue
		}
		if err := checkNodeManagerPod(spec, &spec.Containers[i]); err != nil {
			return nil, fmt.Errorf("DaemonSet %s: %w", ds.Name, err)
		}
		out = append(out, ds)
	}
	return out, nil
}

// checkNodeManagerPod refuses a cloud-node-manager pod that would not
// initialise its node as the simulation plays it: it must know its node's
// name (NODE_NAME from spec.nodeName, passed as --node-name on Linux; the
// Windows pod's start script passes it), run on the host's network (the
// Instance Metadata Service answers the host), and on Windows be a
// HostProcess pod (the chart's Windows image runs on the host). The
// placement the simulation checks is node selector and tolerations, so
// affinity is refused.
func checkNodeManagerPod(spec *corev1.PodSpec, c *corev1.Container) error {
	if spec.Affinity != nil {
		return errors.New("the simulation places cloud-node-manager by node selector and tolerations only, not affinity")
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		return errors.New("cloud-node-manager's container has no NODE_NAME from spec.nodeName")
	}
	if !spec.HostNetwork {
		return errors.New("cloud-node-manager runs on the host's network")
	}
	if spec.NodeSelector[corev1.LabelOSStable] == "windows" {
		if spec.SecurityContext == nil || spec.SecurityContext.WindowsOptions == nil || !ptr.Deref(spec.SecurityContext.WindowsOptions.HostProcess, false) {
			return errors.New("the Windows cloud-node-manager runs as a HostProcess pod")
		}
		return nil
	}
	if !slices.Contains(append(slices.Clone(c.Command), c.Args...), "--node-name=$(NODE_NAME)") {
		return errors.New("cloud-node-manager runs with --node-name=$(NODE_NAME)")
	}
	return nil
}

// start starts the node controller once a cloud-node-manager DaemonSet
// exists, as its ServiceAccount; nil, nil while none does.
func (m *azureNodeManager) start(ctx context.Context) (func(), error) {
	dss, err := m.daemonSets(ctx)
	if err != nil || len(dss) == 0 {
		return nil, err
	}
	ds := dss[0]
	for _, other := range dss[1:] {
		if other.Spec.Template.Spec.ServiceAccountName != ds.Spec.Template.Spec.ServiceAccountName {
			return nil, fmt.Errorf("DaemonSets %s and %s run as different ServiceAccounts; the simulation runs one node controller", ds.Name, other.Name)
		}
	}
	cfg, err := podServiceAccount(ctx, m.workload, m.config, &ds)
	if err != nil {
		return nil, err
	}
	m.serviceAccount = ds.Spec.Template.Spec.ServiceAccountName
	cfg.UserAgent = "cloud-node-manager (simulated)"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	nc, err := nodecontroller.NewCloudNodeController(factory.Core().V1().Nodes(), cs, &azureIMDS{m: m}, nodeStatusUpdateFrequency, 1, 1)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	factory.Start(ctx.Done())
	wg.Go(func() { nc.RunWithContext(ctx, controllersmetrics.NewControllerManagerMetrics("cloud-node-manager")) })
	return func() { cancel(); wg.Wait(); factory.Shutdown() }, nil
}

// nodeStatusUpdateFrequency is cloud-node-manager's default
// --node-status-update-frequency.
const nodeStatusUpdateFrequency = 5 * time.Minute

// azureIMDS is the cloud provider the node controller asks: for each
// Node, what the cloud-node-manager pod on it reads from its VM's Instance
// Metadata Service.
type azureIMDS struct {
	m *azureNodeManager
}

var _ cloudprovider.Interface = &azureIMDS{}

// vm is the VM the node runs on, when a cloud-node-manager pod may run
// there.
func (a *azureIMDS) vm(ctx context.Context, node *corev1.Node) (*azureVM, error) {
	dss, err := a.m.daemonSets(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(dss, func(ds appsv1.DaemonSet) bool { return schedulable(&ds.Spec.Template.Spec, node) })
	if i < 0 {
		return nil, fmt.Errorf("node %s: no cloud-node-manager DaemonSet may run on it (node selector, tolerations)", node.Name)
	}
	if sa := dss[i].Spec.Template.Spec.ServiceAccountName; sa != a.m.serviceAccount {
		return nil, fmt.Errorf("node %s: DaemonSet %s runs as ServiceAccount %s; the simulation runs one node controller, as %s", node.Name, dss[i].Name, sa, a.m.serviceAccount)
	}
	if err := a.m.volumes(ctx, &dss[i]); err != nil {
		return nil, fmt.Errorf("node %s: the pod of DaemonSet %s cannot start: %w", node.Name, dss[i].Name, err)
	}
	id, ok := a.m.guests.vmOfNode(node.Name)
	if !ok {
		return nil, fmt.Errorf("node %s: no simulated VM registered it", node.Name)
	}
	vms, err := azureVMs{cloud: a.m.cloud}.VMs(ctx)
	if err != nil {
		return nil, err
	}
	i = slices.IndexFunc(vms, func(v cloudVM) bool { return v.ID == id })
	if i < 0 {
		return nil, cloudprovider.InstanceNotFound
	}
	return vms[i].azure, nil
}

// volumes checks that the ConfigMaps and Secrets a DaemonSet's pod mounts
// exist: the kubelet does not start a pod without them.
func (m *azureNodeManager) volumes(ctx context.Context, ds *appsv1.DaemonSet) error {
	for _, v := range ds.Spec.Template.Spec.Volumes {
		var obj client.Object
		var name string
		switch {
		case v.ConfigMap != nil && !ptr.Deref(v.ConfigMap.Optional, false):
			obj, name = &corev1.ConfigMap{}, v.ConfigMap.Name
		case v.Secret != nil && !ptr.Deref(v.Secret.Optional, false):
			obj, name = &corev1.Secret{}, v.Secret.SecretName
		default:
			continue
		}
		if err := m.workload.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: name}, obj); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	return nil
}

// InstanceExists implements cloudprovider.InstancesV2.
func (a *azureIMDS) InstanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	_, err := a.vm(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	return err == nil, err
}

// InstanceShutdown implements cloudprovider.InstancesV2: the simulated
// Azure has no stopped VMs.
func (a *azureIMDS) InstanceShutdown(context.Context, *corev1.Node) (bool, error) {
	return false, nil
}

// InstanceMetadata implements cloudprovider.InstancesV2 as
// cloud-node-manager does from the Instance Metadata Service: the provider
// ID is azure:// and the VM's resource ID with the subscription and
// resource group in lower case; the addresses are the host name and the
// network interface's private address; then the VM size, the region, and
// the zone as <region>-<zone>, or the fault domain ("0" here) for a VM
// without a zone.
func (a *azureIMDS) InstanceMetadata(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	vm, err := a.vm(ctx, node)
	if err != nil {
		return nil, err
	}
	m := vmIDPattern.FindStringSubmatch(ptr.Deref(vm.vm.ID, ""))
	if m == nil {
		return nil, fmt.Errorf("VM ID %s", ptr.Deref(vm.vm.ID, ""))
	}
	region := strings.ToLower(ptr.Deref(vm.vm.Location, ""))
	zone := "0"
	if len(vm.vm.Zones) > 0 {
		zone = region + "-" + ptr.Deref(vm.vm.Zones[0], "")
	}
	size := ""
	if p := vm.vm.Properties; p != nil && p.HardwareProfile != nil {
		size = string(ptr.Deref(p.HardwareProfile.VMSize, ""))
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    fmt.Sprintf("azure:///subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s", strings.ToLower(m[1]), strings.ToLower(m[2]), m[3]),
		InstanceType:  size,
		NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: node.Name}, {Type: corev1.NodeInternalIP, Address: vm.ip}},
		Zone:          zone,
		Region:        region,
	}, nil
}

// vmIDPattern matches a VM's ID: its subscription and resource group.
var vmIDPattern = regexp.MustCompile(`(?i)^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/virtualMachines/([^/]+)$`)

// The rest of cloudprovider.Interface: cloud-node-manager has instances only.
func (a *azureIMDS) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (a *azureIMDS) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return nil, false }
func (a *azureIMDS) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (a *azureIMDS) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return a, true }
func (a *azureIMDS) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (a *azureIMDS) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (a *azureIMDS) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (a *azureIMDS) ProviderName() string                                              { return "azure" }
func (a *azureIMDS) HasClusterID() bool                                                { return true }
