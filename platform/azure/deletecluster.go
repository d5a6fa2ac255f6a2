package azure

import (
	"context"

	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// DeleteCluster deletes what capwin made for the cluster, one operation
// per call: the resource group when capwin made it (with everything in
// it), else the load balancer, the public IP address, the virtual
// network, the route table and the security groups that carry the
// cluster's tag. Resources without it are left alone.
func (p *Platform) DeleteCluster(ctx context.Context) (bool, infrav1.ClusterOperation, error) {
	all := p.resources()
	if op := p.cluster.Status.Operation; !op.IsZero() {
		done, next, err := p.resumeShared(ctx, all, op)
		if !done && err == nil {
			return false, next, nil
		}
		if err != nil && (!isOperationFailed(err) || op.Type == infrav1.ClusterOperationDelete) {
			// A delete Azure failed says why, and is tried again
			// after the retry.
			return false, next, err
		}
		// A failed create is deleted like any other resource.
	}
	g, err := all[0].get(ctx)
	if err != nil {
		return false, infrav1.ClusterOperation{}, err
	}
	if g == nil {
		return true, infrav1.ClusterOperation{}, nil
	}
	order := all[1:]
	if p.ownedByCluster(g.tags) {
		other, err := p.otherClustersResource(ctx)
		if err != nil {
			return false, infrav1.ClusterOperation{}, err
		}
		if other == "" {
			// Everything in the group capwin made goes with it.
			order = all[:1]
		}
		// Else the group holds another cluster's resources: this
		// cluster's own are deleted one by one, and the group is kept.
	}
	for i := len(order) - 1; i >= 0; i-- {
		r := order[i]
		f, err := r.get(ctx)
		if err != nil {
			return false, infrav1.ClusterOperation{}, err
		}
		if f == nil || !p.ownedByCluster(f.tags) {
			continue
		}
		if f.state == "Deleting" {
			return false, infrav1.ClusterOperation{}, waitFor(r.kind, r.name, f.state)
		}
		token, err := r.remove(ctx)
		if err != nil {
			return false, infrav1.ClusterOperation{}, err
		}
		if token != "" {
			return false, infrav1.ClusterOperation{Type: infrav1.ClusterOperationDelete, Resource: r.path, ID: token}, nil
		}
	}
	return true, infrav1.ClusterOperation{}, nil
}

// otherClustersResource returns the ID of a resource in the cluster's
// resource group that carries another cluster's tag, or "".
func (p *Platform) otherClustersResource(ctx context.Context) (string, error) {
	pager := p.clients.resources.NewListByResourceGroupPager(p.group(), nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return "", classify("listing the resources of resource group "+p.group(), err)
		}
		for _, r := range page.Value {
			if r == nil {
				continue
			}
			if c := ptr.Deref(r.Tags[ClusterTag], ""); c != "" && c != p.clusterKey() {
				return ptr.Deref(r.ID, ""), nil
			}
		}
	}
	return "", nil
}
