package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The kubelet's node lease: its duration and how often the kubelet renews
// it (a quarter of the duration), the kubelet's defaults.
const (
	leaseDuration = 40 * time.Second
	leaseRenew    = 10 * time.Second
)

// registrationRetry is how soon a kubelet whose registration the API
// server refused tries again (the real one backs off from 100 ms to 7 s).
const registrationRetry = time.Second

// run is the kubelet's life once it has its credentials (cs, its own
// identity system:node:<name>): it registers its Node, posts its status,
// renews its Lease, and plays its failure, until ctx ends. registered is
// called once the Node and its first status are in. Every write is the
// kubelet's own, so the Node authorizer and NodeRestriction judge it.
func (k *kubelet) run(ctx context.Context, cs kubernetes.Interface, failure Failure, registered func(*corev1.Node), log logr.Logger) {
	var node *corev1.Node
	for node == nil {
		n, err := k.registerWith(ctx, cs, failure != NeverReady)
		if err == nil {
			node = n
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Info("Unable to register node with API server", "node", k.node.Name, "err", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(registrationRetry):
		}
	}
	registered(node)
	notReadyAt := time.Now().Add(time.Second)
	renew := time.NewTicker(leaseRenew)
	defer renew.Stop()
	for {
		if err := renewLease(ctx, cs, node.Name); err != nil && ctx.Err() == nil {
			log.Info("Failed to update lease", "node", node.Name, "err", err.Error())
		}
		wait := leaseRenew
		if failure == ReadyThenNotReady {
			if d := time.Until(notReadyAt); d > 0 {
				wait = d
			} else {
				if err := postStatus(ctx, cs, node.Name, nil, false); err != nil && ctx.Err() == nil {
					log.Info("Error updating node status", "node", node.Name, "err", err.Error())
					continue
				}
				log.Info("Node went NotReady", "node", node.Name)
				failure = NeverReady // posted once; it stays NotReady
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// registerWith creates the kubelet's Node (or finds the one it made
// before a restart) and posts its first status.
func (k *kubelet) registerWith(ctx context.Context, cs kubernetes.Interface, ready bool) (*corev1.Node, error) {
	n := k.register()
	created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// A restarted kubelet's Node is already there.
	case err != nil:
		return nil, fmt.Errorf("registering Node %s: %w", n.Name, err)
	default:
		n = created
	}
	if err := postStatus(ctx, cs, n.Name, &n.Status, ready); err != nil {
		return nil, err
	}
	return n, nil
}

// postStatus writes the Node's conditions and, when given, the kubelet's
// first status: its system information and, unless a cloud controller
// manager has set them already, its addresses.
func postStatus(ctx context.Context, cs kubernetes.Interface, name string, first *corev1.NodeStatus, ready bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if first != nil {
			n.Status.NodeInfo = first.NodeInfo
			if len(n.Status.Addresses) == 0 {
				n.Status.Addresses = first.Addresses
			}
		}
		n.Status.Conditions = kubeletConditions(ready)
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// kubeletConditions are the conditions a Windows or Linux kubelet reports,
// healthy but for Ready when ready is false; Cluster API's NodeHealthy
// looks at them all.
func kubeletConditions(ready bool) []corev1.NodeCondition {
	now := metav1.Now()
	cond := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}
	if !ready {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready"
	}
	conds := []corev1.NodeCondition{cond}
	for _, c := range []struct {
		t      corev1.NodeConditionType
		reason string
	}{
		{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory"},
		{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure"},
		{corev1.NodePIDPressure, "KubeletHasSufficientPID"},
	} {
		conds = append(conds, corev1.NodeCondition{Type: c.t, Status: corev1.ConditionFalse, Reason: c.reason, LastHeartbeatTime: now, LastTransitionTime: now})
	}
	return conds
}

// renewLease creates or renews the node's Lease in kube-node-lease, as the
// kubelet's heartbeat does.
func renewLease(ctx context.Context, cs kubernetes.Interface, name string) error {
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To(int32(leaseDuration / time.Second)), RenewTime: &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}
