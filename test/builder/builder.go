// Package builder builds the objects capwin's tests keep writing out: a
// Cluster with its vSphere HybridCluster and credentials Secret, a Machine
// with its bootstrap data Secret and its Windows vSphere HybridMachine. In
// the spirit of Cluster API's util/test/builder: Kind(namespace, name)
// gives a builder with sensible defaults, With... changes one thing, Build
// returns the object.
package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// ClusterBuilder builds a Cluster whose infrastructure is a HybridCluster.
type ClusterBuilder struct {
	namespace, name string
	infrastructure  string
	pods            []string
}

// Cluster builds a Cluster whose infrastructure is the HybridCluster of the
// same name, with pods in 10.244.0.0/16.
func Cluster(namespace, name string) *ClusterBuilder {
	return &ClusterBuilder{namespace: namespace, name: name, infrastructure: name, pods: []string{"10.244.0.0/16"}}
}

// Build returns the Cluster.
func (b *ClusterBuilder) Build() *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.namespace},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: b.pods}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "HybridCluster", Name: b.infrastructure},
		},
	}
}

// HybridClusterBuilder builds a vSphere HybridCluster.
type HybridClusterBuilder struct {
	namespace, name string
	spec            infrav1.VSphereClusterSpec
	owner           *clusterv1.Cluster
}

// VSphereCluster builds a vSphere HybridCluster in datacenter DC0 (vcsim's)
// whose credentials are the Secret "vc-creds" of its namespace.
func VSphereCluster(namespace, name string) *HybridClusterBuilder {
	return &HybridClusterBuilder{namespace: namespace, name: name, spec: infrav1.VSphereClusterSpec{
		Datacenter:  "DC0",
		IdentityRef: infrav1.IdentityReference{Kind: infrav1.SecretIdentity, Name: "vc-creds"},
	}}
}

// WithServer sets the vCenter's host[:port].
func (b *HybridClusterBuilder) WithServer(server string) *HybridClusterBuilder {
	b.spec.Server = server
	return b
}

// WithInsecure trusts the vCenter's certificate without checking it.
func (b *HybridClusterBuilder) WithInsecure() *HybridClusterBuilder {
	b.spec.Insecure = ptr.To(true)
	return b
}

// WithOwner makes the Cluster (created, with its UID) its owner.
func (b *HybridClusterBuilder) WithOwner(c *clusterv1.Cluster) *HybridClusterBuilder {
	b.owner = c
	return b
}

// Build returns the HybridCluster.
func (b *HybridClusterBuilder) Build() *infrav1.HybridCluster {
	hc := &infrav1.HybridCluster{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.namespace},
		Spec:       infrav1.HybridClusterSpec{VSphere: b.spec.DeepCopy()},
	}
	if b.owner != nil {
		hc.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: b.owner.Name, UID: b.owner.UID}}
	}
	return hc
}

// CredentialsSecret is the Secret a HybridCluster's SecretIdentity names:
// a username and a password.
func CredentialsSecret(namespace, name, username, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Data:       map[string][]byte{"username": []byte(username), "password": []byte(password)},
	}
}

// MachineBuilder builds a Machine whose infrastructure is a HybridMachine.
type MachineBuilder struct {
	namespace, name string
	cluster         string
	dataSecret      *string
	infrastructure  string
}

// Machine builds a Machine of the cluster whose infrastructure is the
// HybridMachine of the same name, without bootstrap data.
func Machine(namespace, name, cluster string) *MachineBuilder {
	return &MachineBuilder{namespace: namespace, name: name, cluster: cluster, infrastructure: name}
}

// WithBootstrapDataSecret names the Secret of its bootstrap data.
func (b *MachineBuilder) WithBootstrapDataSecret(name string) *MachineBuilder {
	b.dataSecret = ptr.To(name)
	return b
}

// Build returns the Machine.
func (b *MachineBuilder) Build() *clusterv1.Machine {
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.namespace},
		Spec: clusterv1.MachineSpec{
			ClusterName: b.cluster,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: b.dataSecret},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "HybridMachine", Name: b.infrastructure},
		},
	}
}

// BootstrapDataSecret is a Machine's bootstrap data Secret, as a bootstrap
// provider writes it: the data and its format.
func BootstrapDataSecret(namespace, name string, format, value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": []byte(value), "format": []byte(format)},
	}
}

// HybridMachineBuilder builds a Windows vSphere HybridMachine.
type HybridMachineBuilder struct {
	namespace, name string
	os              infrav1.OSSpec
	spec            infrav1.VSphereMachineSpec
	owner           *clusterv1.Machine
}

// WindowsVSphereMachine builds a Windows Server 2022 HybridMachine on
// vSphere with 4 CPUs, 8 GiB and one NIC on "VM Network" by DHCP, cloned
// from vcsim's DC0_H0_VM0 into its cluster DC0_C0.
func WindowsVSphereMachine(namespace, name string) *HybridMachineBuilder {
	return &HybridMachineBuilder{
		namespace: namespace, name: name,
		os: infrav1.OSSpec{Type: infrav1.OSWindows, WindowsRelease: infrav1.WindowsServer2022, WindowsBuild: "10.0.20348"},
		spec: infrav1.VSphereMachineSpec{
			Template: "DC0_H0_VM0", NumCPUs: 4, MemoryMiB: 8192, ResourcePool: "/DC0/host/DC0_C0/Resources",
			Network: []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", DHCP4: ptr.To(true)}},
		},
	}
}

// Linux makes it a Linux machine.
func (b *HybridMachineBuilder) Linux() *HybridMachineBuilder {
	b.os = infrav1.OSSpec{Type: infrav1.OSLinux}
	return b
}

// WithTemplate sets the VM template it is cloned from.
func (b *HybridMachineBuilder) WithTemplate(template string) *HybridMachineBuilder {
	b.spec.Template = template
	return b
}

// WithStaticAddress gives its NIC a static address (CIDR) and gateway
// instead of DHCP.
func (b *HybridMachineBuilder) WithStaticAddress(cidr, gateway string) *HybridMachineBuilder {
	b.spec.Network = []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{cidr}, Gateway4: gateway}}
	return b
}

// WithOwner makes the Machine (created, with its UID) its controller, and
// labels it with the Machine's cluster, as Cluster API does.
func (b *HybridMachineBuilder) WithOwner(m *clusterv1.Machine) *HybridMachineBuilder {
	b.owner = m
	return b
}

// Build returns the HybridMachine.
func (b *HybridMachineBuilder) Build() *infrav1.HybridMachine {
	hm := &infrav1.HybridMachine{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.namespace},
		Spec:       infrav1.HybridMachineSpec{OS: b.os, VSphere: b.spec.DeepCopy()},
	}
	if b.owner != nil {
		hm.Labels = map[string]string{clusterv1.ClusterNameLabel: b.owner.Spec.ClusterName}
		hm.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: b.owner.Name, UID: b.owner.UID, Controller: ptr.To(true)}}
	}
	return hm
}
