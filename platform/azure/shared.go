package azure

import (
	"context"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// shared is one of the cluster's shared resources, as EnsureCluster and
// DeleteCluster drive it.
type shared struct {
	kind, name string
	// path is the resource's type and name, as recorded in
	// status.operation.resource.
	path string
	// get reads the resource: nil when it does not exist.
	get func(ctx context.Context) (*found, error)
	// create begins making it; the token of the operation, or "" when it
	// ended already.
	create func(ctx context.Context) (string, error)
	// remove begins deleting it.
	remove func(ctx context.Context) (string, error)
	// resume polls a recorded operation once.
	resume func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error)
	// byoAllowed: a resource of this name that capwin did not make is
	// used as it is (the resource group, the virtual network); for the
	// others it is a name clash.
	byoAllowed bool
}

// found is what a shared resource's read tells.
type found struct {
	state string
	tags  map[string]*string
}

func (s shared) String() string { return s.kind + " " + s.name }

// resources are the cluster's shared resources in the order they are
// made; they are deleted in the reverse order.
func (p *Platform) resources() []shared {
	a := p.cluster.Spec.Azure
	names := p.names()
	out := []shared{p.groupResource()}
	for _, role := range []infrav1.AzureSubnetRole{infrav1.SubnetControlPlane, infrav1.SubnetNode} {
		out = append(out, p.nsgResource(names.nsg[role], role))
	}
	out = append(out, p.routeTableResource(names.routeTable), p.vnetResource(a.Network))
	if p.publicLB() {
		out = append(out, p.publicIPResource(names.publicIP), p.lbResource(names))
	}
	return out
}

// byoNetworkPart reports whether r is made only with a network capwin
// makes.
func (r shared) byoNetworkPart() bool {
	return r.kind == "security group" || r.kind == "route table" || r.kind == "virtual network"
}

// resumeShared polls the recorded operation once.
func (p *Platform) resumeShared(ctx context.Context, all []shared, op infrav1.ClusterOperation) (bool, infrav1.ClusterOperation, error) {
	for _, r := range all {
		if strings.EqualFold(r.path, op.Resource) {
			done, token, err := r.resume(ctx, op.Type, op.ID)
			return done, withToken(op, token), err
		}
	}
	if s, ok := p.subnetOf(op.Resource); ok {
		poller, err := p.clients.subnets.BeginCreateOrUpdate(ctx, p.group(), p.cluster.Spec.Azure.Network.VNetName, s.Name, armnetwork.Subnet{}, &armnetwork.SubnetsClientBeginCreateOrUpdateOptions{ResumeToken: op.ID})
		done, token, err := pollToken(ctx, "creating subnet "+s.Name, op.ID, poller, err)
		return done, withToken(op, token), err
	}
	// A resource this spec no longer names: looked at afresh.
	return true, infrav1.ClusterOperation{}, nil
}

// withToken is op with its resume token replaced, or no operation when
// the token is "" (the operation ended).
func withToken(op infrav1.ClusterOperation, token string) infrav1.ClusterOperation {
	if token == "" {
		return infrav1.ClusterOperation{}
	}
	op.ID = token
	return op
}

// describe says what a recorded operation does, for the condition.
func describe(op infrav1.ClusterOperation, all []shared) string {
	if op.IsZero() {
		return ""
	}
	what := op.Resource
	for _, r := range all {
		if strings.EqualFold(r.path, op.Resource) {
			what = r.String()
		}
	}
	if op.Type == infrav1.ClusterOperationDelete {
		return "Deleting " + what
	}
	return "Creating " + what
}

// begun adapts a Begin call to shared.create and shared.remove.
func begun[T any](ctx context.Context, what string, poller *runtime.Poller[T], err error) (string, error) {
	if err != nil {
		return "", classify(what, err)
	}
	return startedToken(ctx, what, poller)
}

// netState is the provisioning state of a network resource's properties.
func netState[T any](props *T, state func(*T) *armnetwork.ProvisioningState) string {
	if props == nil {
		return ""
	}
	return string(ptr.Deref(state(props), ""))
}
