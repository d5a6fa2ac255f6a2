package sim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func linuxNode(hostname string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: hostname, Labels: map[string]string{
		corev1.LabelHostname: hostname, corev1.LabelArchStable: "amd64",
	}}}
}

// startLinuxKubelet starts a Linux node's kubelet with the credentials
// kubeadm wrote for it; kubeadm init then marks a control-plane node.
func (g *Guests) startLinuxKubelet(gs *guest) error {
	cs, err := g.linuxKubeletClient(gs.nodeName)
	if err != nil {
		return err
	}
	gs.state = registered
	log := g.log.WithValues("vm", gs.vmName, "node", gs.nodeName)
	gs.procs.Go(func() { gs.kubelet.run(gs.ctx, cs, gs.failure, g.linuxRegistered(gs), log) })
	return nil
}

// linuxRegistered is what follows a Linux kubelet's registration: kubeadm
// marks a control-plane node, and the node counts as joined.
func (g *Guests) linuxRegistered(gs *guest) func(*corev1.Node) {
	log := g.log.WithValues("vm", gs.vmName, "node", gs.nodeName)
	return func(n *corev1.Node) {
		if gs.kubelet.controlPlane {
			if err := g.markControlPlane(gs.ctx, gs.kubelet, n.Name); err != nil {
				log.Error(err, "kubeadm could not mark the control-plane node")
				return
			}
		}
		g.mu.Lock()
		g.joined = append(g.joined, n.Name)
		g.mu.Unlock()
		log.Info("Node registered by its kubelet", "ready", gs.failure != NeverReady)
	}
}

// markControlPlane is kubeadm init's mark-control-plane phase, with
// kubeadm's admin credentials: the control-plane label, and the taint
// unless nodeRegistration.taints is set. (NodeRestriction forbids the
// kubelet the label.)
func (g *Guests) markControlPlane(ctx context.Context, k *kubelet, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := g.workload.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
		n.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		if !hasTaints(k.node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule})
		}
		return g.workload.Update(ctx, n)
	})
}
