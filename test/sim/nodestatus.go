package sim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubeletStopped is kube-controller-manager's node lifecycle controller
// for a Node whose kubelet stopped posting its status: Ready turns
// Unknown. (The real one waits out --node-monitor-grace-period, 50 s; the
// simulation does it at once.)
func (g *Guests) kubeletStopped(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := g.workload.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return client.IgnoreNotFound(err)
		}
		now := metav1.Now()
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", now
		}
		return client.IgnoreNotFound(g.workload.Status().Update(ctx, n))
	})
}
