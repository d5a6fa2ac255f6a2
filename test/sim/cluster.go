package sim

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	"sigs.k8s.io/cluster-api/util/secret"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/envtest"
)

// KubernetesVersion is the version the simulated clusters run: that of the
// envtest API servers.
const KubernetesVersion = "v1.36.3"

// ControlPlaneEndpointIP is the clusters' control-plane VIP. The simulated
// network routes it to the workload API server, whose serving certificate
// names it, as kube-vip's VIP reaches a control-plane node's API server.
const ControlPlaneEndpointIP = "10.0.0.10"

// ClusterOptions describe a cluster to create from a flavor.
type ClusterOptions struct {
	Namespace string
	Name      string
	// WindowsReplicas is WINDOWS_WORKER_MACHINE_COUNT.
	WindowsReplicas int
	// Template is the flavor file; the platform's DefaultTemplate when
	// empty.
	Template string
}

// DefaultTemplate is the flavor `capwin dev` and the end-to-end tests use
// on a platform (PlatformVSphere when empty).
func DefaultTemplate(platform string) string {
	if platform == "" {
		platform = PlatformVSphere
	}
	return FlavorTemplate(platform + "-windows")
}

// FlavorTemplate is the file of the flavor of that name (what
// `clusterctl generate cluster --flavor` names it).
func FlavorTemplate(flavor string) string {
	return filepath.Join(envtest.RepoRoot(), "templates", "cluster-template-"+flavor+".yaml")
}

// sshKey is the simulated clusters' SSH key: nothing logs in with it.
const sshKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICgW+26vf/XewPTWdp6YbAqSKtbPe+fopP/RDiIrSZO0 capwin-sim"

// Variables are the clusterctl variables that point a flavor at the
// simulation. On vSphere: vcsim's inventory (datacenter DC0, its
// standalone host DC0_H0 and the VM DC0_H0_VM0 as the template) and the
// vCenter's thumbprint. On Azure: the simulated subscription, a service
// principal (the simulation takes any), and the gallery images the guests
// know (azureImageBuild).
func (s *Sim) Variables(o ClusterOptions) map[string]string {
	vars := map[string]string{
		"CLUSTER_NAME":                 o.Name,
		"NAMESPACE":                    o.Namespace,
		"KUBERNETES_VERSION":           KubernetesVersion,
		"CONTROL_PLANE_MACHINE_COUNT":  "1",
		"WORKER_MACHINE_COUNT":         "0",
		"WINDOWS_WORKER_MACHINE_COUNT": strconv.Itoa(o.WindowsReplicas),
	}
	if s.Azure != nil {
		version := strings.TrimPrefix(KubernetesVersion, "v")
		maps.Copy(vars, map[string]string{
			"AZURE_SUBSCRIPTION_ID":        AzureSubscription,
			"AZURE_LOCATION":               AzureLocation,
			"AZURE_TENANT_ID":              "11111111-2222-3333-4444-555555555555",
			"AZURE_CLIENT_ID":              "22222222-3333-4444-5555-666666666666",
			"AZURE_CLIENT_SECRET":          "capwin-sim-secret",
			"AZURE_LINUX_IMAGE_ID":         fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/galleries/%s/images/%s/versions/%s", AzureSubscription, AzureImageGroup, AzureGallery, AzureLinuxImage, version),
			"AZURE_GALLERY_RESOURCE_GROUP": AzureImageGroup,
			"AZURE_GALLERY_NAME":           AzureGallery,
			"AZURE_WINDOWS_IMAGE_VERSION":  version,
			"AZURE_SSH_PUBLIC_KEY":         sshKey,
		})
		return vars
	}
	host, port, _ := net.SplitHostPort(s.VCenter.Host) // vcsim listens on host:port
	maps.Copy(vars, map[string]string{
		"CONTROL_PLANE_ENDPOINT_IP":  ControlPlaneEndpointIP,
		"VSPHERE_SERVER":             host,
		"VSPHERE_PORT":               port,
		"VSPHERE_DATACENTER":         "DC0",
		"VSPHERE_TLS_THUMBPRINT":     s.VCenter.Thumbprint,
		"VSPHERE_USERNAME":           VCenterUser,
		"VSPHERE_PASSWORD":           VCenterPassword,
		"VSPHERE_LINUX_TEMPLATE":     LinuxTemplate,
		"VSPHERE_WINDOWS_TEMPLATE":   WindowsTemplate,
		"VSPHERE_FOLDER":             "/DC0/vm",
		"VSPHERE_RESOURCE_POOL":      "/DC0/host/DC0_H0/Resources",
		"VSPHERE_DATASTORE":          "LocalDS_0",
		"VSPHERE_NETWORK":            "VM Network",
		"VSPHERE_SSH_AUTHORIZED_KEY": sshKey,
	})
	return vars
}

// Generate renders the flavor with clusterctl's own variable substitution,
// as `clusterctl generate cluster` does, and returns its objects. For a
// Cluster with a topology, clusterctl adds the ClusterClass from the file
// clusterclass-<class>.yaml next to the flavor, rendered alike, first;
// so does Generate.
func (s *Sim) Generate(o ClusterOptions) ([]*unstructured.Unstructured, error) {
	path := o.Template
	if path == "" {
		path = DefaultTemplate(s.platform)
	}
	objs, err := s.render(path, o)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		class, ok, _ := unstructured.NestedString(obj.Object, "spec", "topology", "classRef", "name")
		if obj.GetKind() != "Cluster" || !ok {
			continue
		}
		classObjs, err := s.render(filepath.Join(filepath.Dir(path), "clusterclass-"+class+".yaml"), o)
		if err != nil {
			return nil, err
		}
		for _, c := range classObjs {
			a := c.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[fromClassFile] = ""
			c.SetAnnotations(a)
		}
		return append(classObjs, objs...), nil
	}
	return objs, nil
}

// fromClassFile marks, in what Generate returns, the objects of a
// ClusterClass's file, which every cluster of the class shares: CreateCluster
// leaves them out when the ClusterClass exists, as clusterctl does.
const fromClassFile = "sim.capwin.io/from-class-file"

func (s *Sim) render(path string, o ClusterOptions) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vars := s.Variables(o)
	out, err := yamlprocessor.NewSimpleProcessor().Process(raw, func(name string) (string, error) {
		if v, ok := vars[name]; ok {
			return v, nil
		}
		return "", fmt.Errorf("variable %s is not set", name)
	})
	if err != nil {
		return nil, fmt.Errorf("generating from %s: %w", path, err)
	}
	return envtest.DecodeObjects(out)
}

// CreateCluster generates the flavor and applies it, with what stands in
// for the KubeadmControlPlane, and returns the flavor's objects it created
// (not the Secrets and stand-ins it makes besides). For a flavor without a
// ClusterClass that is a stand-alone control-plane Machine (see
// controlPlane), made here; for a Cluster with a topology, Cluster
// API's topology controller creates the KubeadmControlPlane from the class
// and the simulation's stand-in for its controller
// (playKubeadmControlPlanes) makes its machine.
//
// The workload cluster is the simulation's second API server: the cluster's
// CA Secret holds that server's CA and its kubeconfig Secret reaches it, as
// a control-plane provider would have written them.
func (s *Sim) CreateCluster(ctx context.Context, o ClusterOptions) ([]*unstructured.Unstructured, error) {
	objs, err := s.Generate(o)
	if err != nil {
		return nil, err
	}
	c := s.Management.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
		return nil, err
	}
	// As clusterctl, which leaves the class's file out when the ClusterClass
	// exists.
	classExists := false
	for _, obj := range objs {
		if obj.GetKind() == "ClusterClass" {
			err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: obj.GetName()}, &clusterv1.ClusterClass{})
			if client.IgnoreNotFound(err) != nil {
				return nil, err
			}
			classExists = err == nil
		}
	}
	var created []*unstructured.Unstructured
	var cpTemplate, kcp *unstructured.Unstructured
	topology := false
	for _, obj := range objs {
		switch obj.GetKind() {
		case "KubeadmControlPlane":
			kcp = obj
			continue
		case "Cluster":
			_, topology, _ = unstructured.NestedMap(obj.Object, "spec", "topology")
			unstructured.RemoveNestedField(obj.Object, "spec", "controlPlaneRef")
		case "HybridMachineTemplate":
			if obj.GetName() == o.Name+"-control-plane" {
				cpTemplate = obj
			}
		}
		if _, shared := obj.GetAnnotations()[fromClassFile]; shared {
			if classExists {
				continue
			}
			annotations := obj.GetAnnotations()
			delete(annotations, fromClassFile)
			obj.SetAnnotations(annotations)
		}
		if err := c.Create(ctx, obj); err != nil {
			return created, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		created = append(created, obj)
		if obj.GetKind() == "Cluster" {
			// The Secrets come at once: the ClusterCaches connect as soon as
			// the infrastructure is provisioned, and a connection that
			// finds no kubeconfig is tried again only 30 s later.
			if err := s.clusterSecrets(ctx, o, obj); err != nil {
				return created, err
			}
		}
	}
	if !topology && (cpTemplate == nil || kcp == nil) {
		return created, fmt.Errorf("the flavor has no KubeadmControlPlane or HybridMachineTemplate %s-control-plane", o.Name)
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, cluster); err != nil {
		return created, err
	}
	owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}
	if topology {
		return created, nil
	}
	if err := s.controlPlane(ctx, o, kcp, cpTemplate, owner); err != nil {
		return created, err
	}
	return created, nil
}

// clusterSecrets creates the CA and kubeconfig Secrets of cluster, the
// workload cluster's, owned by it.
func (s *Sim) clusterSecrets(ctx context.Context, o ClusterOptions, cluster *unstructured.Unstructured) error {
	kubeconfig, err := Kubeconfig(s.Workload.Config, o.Name)
	if err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.GetName(), UID: cluster.GetUID()}
	for _, sec := range []*corev1.Secret{
		clusterSecret(o, secret.Name(o.Name, secret.ClusterCA), map[string][]byte{secret.TLSCrtDataName: s.Workload.Config.CAData}),
		clusterSecret(o, secret.Name(o.Name, secret.Kubeconfig), map[string][]byte{secret.KubeconfigDataName: kubeconfig}),
	} {
		sec.OwnerReferences = []metav1.OwnerReference{owner}
		if err := s.Management.Client.Create(ctx, sec); err != nil {
			return fmt.Errorf("creating Secret %s: %w", sec.Name, err)
		}
	}
	return nil
}

// controlPlane creates the control plane as Machines of the control-plane
// HybridMachineTemplate with Linux user data: a cloud-config that writes
// the KubeadmControlPlane's InitConfiguration where the kubeadm bootstrap
// provider writes it, so that the node's kubelet runs with the flavor's
// kubelet flags.
//
// This, and nothing on the Windows path, departs from the flavor:
// KubeadmControlPlane checks etcd through each control-plane node's etcd
// Pod, which an API server without nodes cannot serve, so the simulation
// runs the control plane as Machines, which Cluster API supports for
// clusters without a controlPlaneRef: the Cluster is initialised when a
// control-plane Machine has a Node.
func (s *Sim) controlPlane(ctx context.Context, o ClusterOptions, kcp, tmpl *unstructured.Unstructured, owner metav1.OwnerReference) error {
	c := s.Management.Client
	hmt := &infrav1.HybridMachineTemplate{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tmpl), hmt); err != nil {
		return err
	}
	name := o.Name + "-control-plane-0"
	userData, err := initCloudConfig(kcp)
	if err != nil {
		return err
	}
	data := clusterSecret(o, name+"-bootstrap", map[string][]byte{
		"value":  userData,
		"format": []byte("cloud-config"),
	})
	data.OwnerReferences = []metav1.OwnerReference{owner}
	if err := c.Create(ctx, data); err != nil {
		return err
	}
	labels := map[string]string{clusterv1.ClusterNameLabel: o.Name, clusterv1.MachineControlPlaneLabel: ""}
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: o.Name,
			Version:     KubernetesVersion,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(data.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "HybridMachine", Name: name},
		},
	}
	if err := c.Create(ctx, m); err != nil {
		return err
	}
	hm := &infrav1.HybridMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec:       hmt.Spec.Template.Spec,
	}
	return c.Create(ctx, hm)
}

func clusterSecret(o ClusterOptions, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: map[string]string{clusterv1.ClusterNameLabel: o.Name}},
		Type:       clusterv1.ClusterSecretType,
		Data:       data,
	}
}

// initCloudConfig is the part of the kubeadm bootstrap provider's
// cloud-config for the first control-plane node that the simulated guest
// reads: the KubeadmControlPlane's InitConfiguration in
// /run/kubeadm/kubeadm.yaml, Jinja-templated.
func initCloudConfig(kcp *unstructured.Unstructured) ([]byte, error) {
	init, _, err := unstructured.NestedMap(kcp.Object, "spec", "kubeadmConfigSpec", "initConfiguration")
	if err != nil {
		return nil, fmt.Errorf("KubeadmControlPlane %s: %w", kcp.GetName(), err)
	}
	if init == nil {
		init = map[string]any{}
	}
	init["apiVersion"], init["kind"] = "kubeadm.k8s.io/v1beta4", "InitConfiguration"
	doc, err := yaml.Marshal(init)
	if err != nil {
		return nil, err
	}
	cc, err := yaml.Marshal(map[string]any{
		"write_files": []map[string]any{{"path": kubeadmInitFile, "owner": "root:root", "permissions": "0640", "content": string(doc)}},
		"runcmd":      []string{"kubeadm init --config " + kubeadmInitFile},
	})
	if err != nil {
		return nil, err
	}
	return append([]byte("## template: jinja\n#cloud-config\n"), cc...), nil
}

// controlPlaneInitialisedAnnotation is what standInForControlPlane writes
// on a stand-alone control-plane Machine once its Node has a provider ID.
const controlPlaneInitialisedAnnotation = "sim.capwin.io/node-initialized"

// standInForControlPlane makes up for the one thing the simulation's
// stand-alone control-plane Machines lack (see controlPlane). Cluster API
// watches a cluster's Nodes only once its control plane is initialised. A
// KubeadmControlPlane initialises it from kubeadm's ConfigMap in the
// workload cluster, before any Machine has a nodeRef. A cluster without
// one is initialised by a control-plane Machine's nodeRef, which Cluster
// API sets only when something else reconciles the Machine after the
// cloud controller manager gave its Node a provider ID. So, until the
// Cluster is initialised, this annotates a control-plane Machine without
// a nodeRef once a Node has its provider ID, and Cluster API reconciles
// it.
func standInForControlPlane(ctx context.Context, mgmt, workload client.Client, log logr.Logger) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		ms := &clusterv1.MachineList{}
		if err := mgmt.List(ctx, ms, client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
			return
		}
		for i := range ms.Items {
			m := &ms.Items[i]
			if _, kcp := m.Labels[clusterv1.MachineControlPlaneNameLabel]; kcp {
				continue // a KubeadmControlPlane's (playKubeadmControlPlanes initialises it)
			}
			if m.Status.NodeRef.IsDefined() || m.Spec.ProviderID == "" || m.Annotations[controlPlaneInitialisedAnnotation] != "" {
				continue
			}
			nodes := &corev1.NodeList{}
			if err := workload.List(ctx, nodes); err != nil {
				return
			}
			if !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Spec.ProviderID == m.Spec.ProviderID }) {
				continue
			}
			patch := client.MergeFrom(m.DeepCopy())
			metav1.SetMetaDataAnnotation(&m.ObjectMeta, controlPlaneInitialisedAnnotation, time.Now().UTC().Format(time.RFC3339))
			if err := mgmt.Patch(ctx, m, patch); err == nil {
				log.Info("The control plane's Node has its provider ID", "machine", m.Name)
			}
		}
	}, 500*time.Millisecond)
}
