package azure

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// Names inside the API server's load balancer.
const (
	lbFrontend = "apiserver"
	lbPool     = "controlplane"
	lbProbe    = "apiserver"
	lbRule     = "apiserver"
	lbOutbound = "controlplane-outbound"
)

func (p *Platform) publicIPResource(name string) shared {
	return shared{
		kind: "public IP address", name: name, path: "publicIPAddresses/" + name,
		get: func(ctx context.Context) (*found, error) {
			r, err := p.clients.publicIPs.Get(ctx, p.group(), name, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading public IP address "+name, err)
			}
			return &found{state: netState(r.Properties, func(x *armnetwork.PublicIPAddressPropertiesFormat) *armnetwork.ProvisioningState {
				return x.ProvisioningState
			}), tags: r.Tags}, nil
		},
		create: func(ctx context.Context) (string, error) {
			params := armnetwork.PublicIPAddress{
				Location: ptr.To(p.cluster.Spec.Azure.Location),
				Tags:     p.clusterTags(),
				SKU:      &armnetwork.PublicIPAddressSKU{Name: ptr.To(armnetwork.PublicIPAddressSKUNameStandard), Tier: ptr.To(armnetwork.PublicIPAddressSKUTierRegional)},
				Properties: &armnetwork.PublicIPAddressPropertiesFormat{
					PublicIPAllocationMethod: ptr.To(armnetwork.IPAllocationMethodStatic),
					PublicIPAddressVersion:   ptr.To(armnetwork.IPVersionIPv4),
				},
			}
			poller, err := p.clients.publicIPs.BeginCreateOrUpdate(ctx, p.group(), name, params, nil)
			return begun(ctx, "creating public IP address "+name, poller, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.publicIPs.BeginDelete(ctx, p.group(), name, nil)
			return begun(ctx, "deleting public IP address "+name, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			if typ == infrav1.ClusterOperationDelete {
				poller, err := p.clients.publicIPs.BeginDelete(ctx, p.group(), name, &armnetwork.PublicIPAddressesClientBeginDeleteOptions{ResumeToken: token})
				return pollToken(ctx, "deleting public IP address "+name, token, poller, err)
			}
			poller, err := p.clients.publicIPs.BeginCreateOrUpdate(ctx, p.group(), name, armnetwork.PublicIPAddress{}, &armnetwork.PublicIPAddressesClientBeginCreateOrUpdateOptions{ResumeToken: token})
			return pollToken(ctx, "creating public IP address "+name, token, poller, err)
		},
	}
}

func (p *Platform) lbResource(names clusterNames) shared {
	name := names.lb
	return shared{
		kind: "load balancer", name: name, path: "loadBalancers/" + name,
		get: func(ctx context.Context) (*found, error) {
			r, err := p.clients.lbs.Get(ctx, p.group(), name, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading load balancer "+name, err)
			}
			return &found{state: netState(r.Properties, func(x *armnetwork.LoadBalancerPropertiesFormat) *armnetwork.ProvisioningState {
				return x.ProvisioningState
			}), tags: r.Tags}, nil
		},
		create: func(ctx context.Context) (string, error) {
			poller, err := p.clients.lbs.BeginCreateOrUpdate(ctx, p.group(), name, p.lbParams(names), nil)
			return begun(ctx, "creating load balancer "+name, poller, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.lbs.BeginDelete(ctx, p.group(), name, nil)
			return begun(ctx, "deleting load balancer "+name, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			if typ == infrav1.ClusterOperationDelete {
				poller, err := p.clients.lbs.BeginDelete(ctx, p.group(), name, &armnetwork.LoadBalancersClientBeginDeleteOptions{ResumeToken: token})
				return pollToken(ctx, "deleting load balancer "+name, token, poller, err)
			}
			poller, err := p.clients.lbs.BeginCreateOrUpdate(ctx, p.group(), name, armnetwork.LoadBalancer{}, &armnetwork.LoadBalancersClientBeginCreateOrUpdateOptions{ResumeToken: token})
			return pollToken(ctx, "creating load balancer "+name, token, poller, err)
		},
	}
}

// lbParams is the API server's Standard public load balancer: port 6443
// of the public address to port 6443 of the control-plane machines whose
// API server answers /readyz, and an outbound rule through the same
// address, since a machine behind a Standard public load balancer has no
// other way out.
func (p *Platform) lbParams(names clusterNames) armnetwork.LoadBalancer {
	lbID := p.resourceID("loadBalancers", names.lb)
	frontend := &armnetwork.SubResource{ID: ptr.To(lbID + "/frontendIPConfigurations/" + lbFrontend)}
	pool := &armnetwork.SubResource{ID: ptr.To(p.backendPoolID())}
	return armnetwork.LoadBalancer{
		Location: ptr.To(p.cluster.Spec.Azure.Location),
		Tags:     p.clusterTags(),
		SKU:      &armnetwork.LoadBalancerSKU{Name: ptr.To(armnetwork.LoadBalancerSKUNameStandard), Tier: ptr.To(armnetwork.LoadBalancerSKUTierRegional)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{
			FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
				Name:       ptr.To(lbFrontend),
				Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{PublicIPAddress: &armnetwork.PublicIPAddress{ID: ptr.To(p.resourceID("publicIPAddresses", names.publicIP))}},
			}},
			BackendAddressPools: []*armnetwork.BackendAddressPool{{Name: ptr.To(lbPool)}},
			Probes: []*armnetwork.Probe{{
				Name: ptr.To(lbProbe),
				// /readyz, not an open port: a joining control plane's
				// API server listens before it can answer.
				Properties: &armnetwork.ProbePropertiesFormat{
					Protocol:          ptr.To(armnetwork.ProbeProtocolHTTPS),
					Port:              ptr.To[int32](APIServerPort),
					RequestPath:       ptr.To("/readyz"),
					IntervalInSeconds: ptr.To[int32](15),
					NumberOfProbes:    ptr.To[int32](1),
				},
			}},
			LoadBalancingRules: []*armnetwork.LoadBalancingRule{{
				Name: ptr.To(lbRule),
				Properties: &armnetwork.LoadBalancingRulePropertiesFormat{
					Protocol:                ptr.To(armnetwork.TransportProtocolTCP),
					FrontendPort:            ptr.To[int32](APIServerPort),
					BackendPort:             ptr.To[int32](APIServerPort),
					FrontendIPConfiguration: frontend,
					BackendAddressPool:      pool,
					Probe:                   &armnetwork.SubResource{ID: ptr.To(lbID + "/probes/" + lbProbe)},
					IdleTimeoutInMinutes:    ptr.To[int32](4),
					DisableOutboundSnat:     ptr.To(true),
					// A watch or exec idle past the timeout is reset, not
					// left hanging.
					EnableTCPReset: ptr.To(true),
				},
			}},
			OutboundRules: []*armnetwork.OutboundRule{{
				Name: ptr.To(lbOutbound),
				Properties: &armnetwork.OutboundRulePropertiesFormat{
					Protocol:                 ptr.To(armnetwork.LoadBalancerOutboundRuleProtocolAll),
					EnableTCPReset:           ptr.To(true),
					FrontendIPConfigurations: []*armnetwork.SubResource{frontend},
					BackendAddressPool:       pool,
				},
			}},
		},
	}
}

// backendPoolID is the ID of the API server load balancer's pool, which
// control-plane machines' network interfaces join.
func (p *Platform) backendPoolID() string {
	return p.resourceID("loadBalancers", p.names().lb) + "/backendAddressPools/" + lbPool
}
