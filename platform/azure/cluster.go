package azure

import (
	"context"
	"fmt"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// APIServerPort is the port the API server's load balancer forwards, and
// the port of the endpoint capwin sets.
const APIServerPort = 6443

// clusterNames are the names of the resources capwin makes for a cluster,
// derived from the HybridCluster's name.
type clusterNames struct {
	nsg        map[infrav1.AzureSubnetRole]string
	routeTable string
	publicIP   string
	lb         string
}

func (p *Platform) names() clusterNames {
	n := p.cluster.Name
	return clusterNames{
		nsg: map[infrav1.AzureSubnetRole]string{
			infrav1.SubnetControlPlane: n + "-controlplane-nsg",
			infrav1.SubnetNode:         n + "-node-nsg",
		},
		routeTable: n + "-node-routetable",
		publicIP:   n + "-apiserver-pip",
		lb:         n + "-apiserver-lb",
	}
}

// clusterKey is the value of ClusterTag on the cluster's resources: the
// Cluster's namespace and name, as on its machines' resources.
func (p *Platform) clusterKey() string {
	name := p.cluster.Labels[clusterv1.ClusterNameLabel]
	if name == "" {
		name = p.cluster.Name
	}
	return p.cluster.Namespace + "/" + name
}

func (p *Platform) clusterTags() map[string]*string {
	return map[string]*string{ClusterTag: ptr.To(p.clusterKey())}
}

// ownedByCluster reports whether capwin made a resource for this cluster.
func (p *Platform) ownedByCluster(tags map[string]*string) bool {
	return ptr.Deref(tags[ClusterTag], "") == p.clusterKey()
}

func (p *Platform) publicLB() bool {
	return p.cluster.Spec.Azure.APIServerLoadBalancer != infrav1.APIServerLoadBalancerNone
}

// EnsureCluster makes what the cluster's machines need, one operation per
// call: the resource group, then (unless the virtual network exists
// without capwin's tag) a security group per subnet role, the Node
// subnets' route table and the virtual network with its subnets, then the
// API server's public IP address and load balancer. It reports the
// endpoint of that load balancer once its address is known, and, once
// machines can be made, spec.azure.zones as failure domains.
func (p *Platform) EnsureCluster(ctx context.Context) (platform.ClusterState, error) {
	st, err := p.ensureCluster(ctx)
	if err == nil && st.Ready() {
		for _, zone := range p.cluster.Spec.Azure.Zones {
			st.FailureDomains = append(st.FailureDomains, clusterv1.FailureDomain{Name: zone, ControlPlane: ptr.To(true)})
		}
	}
	return st, err
}

func (p *Platform) ensureCluster(ctx context.Context) (platform.ClusterState, error) {
	all := p.resources()
	if op := p.cluster.Status.Operation; !op.IsZero() {
		done, next, err := p.resumeShared(ctx, all, op)
		if err != nil || !done {
			return platform.ClusterState{Operation: next, Waiting: describe(next, all)}, err
		}
	}
	// A virtual network made beforehand is used as it is: it needs none
	// of the security groups and route table of a network capwin makes.
	byoNetwork, err := p.vnetExistsUnowned(ctx)
	if err != nil {
		return platform.ClusterState{}, err
	}
	for _, r := range all {
		if byoNetwork && r.byoNetworkPart() {
			continue
		}
		f, err := r.get(ctx)
		if err != nil {
			return platform.ClusterState{}, err
		}
		if f != nil && !p.ownedByCluster(f.tags) {
			if !r.byoAllowed {
				return platform.ClusterState{}, fmt.Errorf("%w: %s exists in resource group %s and was not made for Cluster %s (tag %s): delete or rename it, or name the HybridCluster otherwise", platform.ErrInvalid, r, p.group(), p.clusterKey(), ClusterTag)
			}
			if f.state != "" && f.state != "Succeeded" {
				return platform.ClusterState{Waiting: fmt.Sprintf("%s is in provisioning state %s", r, f.state)}, nil
			}
			continue
		}
		switch {
		case f == nil, f.state == "Failed":
			// A resource whose last write failed is written again, as
			// ARM allows.
			token, err := r.create(ctx)
			if err != nil {
				return platform.ClusterState{}, err
			}
			if token != "" {
				op := infrav1.ClusterOperation{Type: infrav1.ClusterOperationCreate, Resource: r.path, ID: token}
				return platform.ClusterState{Operation: op, Waiting: describe(op, all)}, nil
			}
		case f.state != "Succeeded":
			return platform.ClusterState{Waiting: fmt.Sprintf("%s is in provisioning state %s", r, f.state)}, nil
		}
		if r.kind == "virtual network" {
			if st, err := p.ensureSubnets(ctx); err != nil || !st.Ready() {
				return st, err
			}
		}
	}
	if byoNetwork {
		if err := p.checkSubnets(ctx); err != nil {
			return platform.ClusterState{}, err
		}
	}
	if !p.publicLB() {
		return platform.ClusterState{}, nil
	}
	ip, err := p.clients.publicIPs.Get(ctx, p.group(), p.names().publicIP, nil)
	if err != nil {
		return platform.ClusterState{}, classify("reading public IP address "+p.names().publicIP, err)
	}
	addr := ""
	if ip.Properties != nil {
		addr = ptr.Deref(ip.Properties.IPAddress, "")
	}
	if addr == "" {
		return platform.ClusterState{Waiting: fmt.Sprintf("public IP address %s has no address yet", p.names().publicIP)}, nil
	}
	ep := clusterv1.APIEndpoint{Host: addr, Port: APIServerPort}
	if set := p.cluster.Spec.ControlPlaneEndpoint; set.IsValid() && set != ep {
		return platform.ClusterState{}, fmt.Errorf("%w: spec.controlPlaneEndpoint is %s:%d, but the API server's load balancer %s that capwin made answers at %s:%d: with spec.azure.apiServerLoadBalancer Public, leave the endpoint empty for capwin to set", platform.ErrInvalid, set.Host, set.Port, p.names().lb, ep.Host, ep.Port)
	}
	return platform.ClusterState{ControlPlaneEndpoint: ep}, nil
}
