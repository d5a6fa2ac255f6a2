package release_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeCall is a request a Windows node component makes to the API server
// with the node's credentials.
type nodeCall struct {
	component, what string
	// byNodeAuthorizer: the Node authorizer allows it without any RBAC.
	byNodeAuthorizer bool
	do               func(ctx context.Context, c kubernetes.Interface, node string) error
}

// windowsNodeCalls are the requests kube-proxy (v1.36, cmd/kube-proxy/app
// server.go and pkg/proxy/node.go) and flanneld (v0.28, pkg/subnet/kube)
// make, as capwin-node runs them: with the kubelet's kubeconfig and, for
// flanneld, NODE_NAME set (so no Pod read).
func windowsNodeCalls() []nodeCall {
	// kube-proxy skips headless and foreign-proxied Services and their
	// EndpointSlices.
	noHeadless := metav1.ListOptions{LabelSelector: "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name"}
	services := metav1.ListOptions{LabelSelector: "!service.kubernetes.io/service-proxy-name", FieldSelector: "spec.clusterIP!=None"}
	own := func(node string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()}
	}
	return []nodeCall{
		{"kube-proxy", "list Services", true, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.CoreV1().Services("").List(ctx, services)
			return err
		}},
		{"kube-proxy", "watch Services", true, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			return stopped(c.CoreV1().Services("").Watch(ctx, services))
		}},
		{"kube-proxy", "list EndpointSlices", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.DiscoveryV1().EndpointSlices("").List(ctx, noHeadless)
			return err
		}},
		{"kube-proxy", "watch EndpointSlices", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			return stopped(c.DiscoveryV1().EndpointSlices("").Watch(ctx, noHeadless))
		}},
		{"kube-proxy", "list ServiceCIDRs", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
			return err
		}},
		{"kube-proxy", "watch ServiceCIDRs", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			return stopped(c.NetworkingV1().ServiceCIDRs().Watch(ctx, metav1.ListOptions{}))
		}},
		{"kube-proxy", "list its own Node", true, func(ctx context.Context, c kubernetes.Interface, node string) error {
			_, err := c.CoreV1().Nodes().List(ctx, own(node))
			return err
		}},
		{"kube-proxy", "watch its own Node", true, func(ctx context.Context, c kubernetes.Interface, node string) error {
			return stopped(c.CoreV1().Nodes().Watch(ctx, own(node)))
		}},
		{"kube-proxy", "create an Event", true, func(ctx context.Context, c kubernetes.Interface, node string) error {
			_, err := c.EventsV1().Events(metav1.NamespaceDefault).Create(ctx, &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", node, time.Now().UnixNano())}, // as client-go's events library names them
				EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "kube-proxy", ReportingInstance: "kube-proxy-" + node,
				Action: "StartKubeProxy", Reason: "Starting", Type: corev1.EventTypeNormal,
				Regarding: corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node), APIVersion: "v1"},
			}, metav1.CreateOptions{})
			return err
		}},
		{"flanneld", "list Nodes", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}},
		{"flanneld", "watch Nodes", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			return stopped(c.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{}))
		}},
		{"flanneld", "get its own Node", true, func(ctx context.Context, c kubernetes.Interface, node string) error {
			_, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			return err
		}},
		{"flanneld", "publish its lease in its Node's annotations", true, func(ctx context.Context, c kubernetes.Interface, node string) error {
			patch := `{"metadata":{"annotations":{"flannel.alpha.coreos.com/backend-type":"vxlan","flannel.alpha.coreos.com/public-ip":"10.0.0.15"}}}`
			_, err := c.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
			return err
		}},
		{"flanneld", "clear its Node's NetworkUnavailable", true, func(ctx context.Context, c kubernetes.Interface, node string) error {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"NetworkUnavailable","status":"False","reason":"FlannelIsUp","message":"Flannel is running on this node","lastTransitionTime":%q,"lastHeartbeatTime":%q}]}}`,
				time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
			_, err := c.CoreV1().Nodes().PatchStatus(ctx, node, []byte(patch))
			return err
		}},
	}
}

// stillRefused are requests a node must not be able to make with what the
// flavors grant: the grants read, they never write beyond the node's own
// Node.
func stillRefused(other string) []nodeCall {
	return []nodeCall{
		{"any", "patch another Node's status", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.CoreV1().Nodes().Patch(ctx, other, types.StrategicMergePatchType, []byte(`{"metadata":{"annotations":{"x":"y"}}}`), metav1.PatchOptions{}, "status")
			return err
		}},
		{"any", "delete another Node", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			return c.CoreV1().Nodes().Delete(ctx, other, metav1.DeleteOptions{})
		}},
		{"any", "create an EndpointSlice", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Create(ctx, endpointSlice(), metav1.CreateOptions{})
			return err
		}},
		{"any", "list Secrets", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"any", "list Pods", false, func(ctx context.Context, c kubernetes.Interface, _ string) error {
			_, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		}},
	}
}

func stopped(w watch.Interface, err error) error {
	if err == nil {
		w.Stop()
	}
	return err
}

// checkWindowsNodeIdentity applies the RBAC objects the flavor's
// ClusterResourceSets put into a workload cluster to the test's API server
// (which runs kubeadm's Node,RBAC authorizers and NodeRestriction) and
// makes kube-proxy's and flanneld's requests as a Windows node does: user
// system:node:<name> in group system:nodes, the kubelet's client
// certificate's identity. Without the flavor's objects the requests only
// RBAC can allow are refused; with them every request succeeds, for a
// flannel cluster and, kube-proxy's, for a Calico cluster; and what a node
// must not do stays refused.
func checkWindowsNodeIdentity(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var cluster *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Cluster" {
			cluster = o
		}
	}
	NewWithT(t).Expect(cluster).NotTo(BeNil())
	for _, c := range []struct {
		name, cni string
		// onlyCNI applies the CNI's ClusterResourceSet alone.
		onlyCNI    bool
		components []string
	}{
		{"flannel", "flannel", false, []string{"kube-proxy", "flanneld"}},
		{"calico", "calico", false, []string{"kube-proxy"}},
		// flanneld's grant does not lean on kube-proxy's.
		{"flannel's set alone", "flannel", true, []string{"flanneld"}},
	} {
		t.Run("Windows node identity, "+c.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			clusterLabels := labels.Set(maps.Clone(cluster.GetLabels()))
			clusterLabels["capwin.io/cni"] = c.cni
			var rbac []*unstructured.Unstructured
			for _, o := range resourceSetAddons(t, objs, func(sel map[string]string) bool {
				if c.onlyCNI && sel["capwin.io/cni"] != c.cni {
					return false
				}
				return labels.SelectorFromSet(sel).Matches(clusterLabels)
			}) {
				if o.GroupVersionKind().Group == "rbac.authorization.k8s.io" {
					rbac = append(rbac, o)
				}
			}
			node, other := "win-"+rand.String(5), "win-"+rand.String(5)
			for _, n := range []string{node, other} {
				g.Expect(env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
			}
			t.Cleanup(func() {
				for _, n := range []string{node, other} {
					_ = env.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
				}
			})
			cfg := rest.CopyConfig(env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + node, Groups: []string{"system:nodes", "system:authenticated"}}
			cs, err := kubernetes.NewForConfig(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			calls := filterCalls(windowsNodeCalls(), c.components...)
			// Without the flavor's objects: the Node authorizer's share only.
			for _, call := range calls {
				err := call.do(ctx, cs, node)
				if call.byNodeAuthorizer {
					g.Expect(err).NotTo(HaveOccurred(), "%s: %s, by the Node authorizer alone", call.component, call.what)
				} else {
					g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %s is refused without the flavor's RBAC, got %v", call.component, call.what, err)
				}
			}

			for _, o := range rbac {
				g.Expect(env.Client.Create(ctx, o.DeepCopy())).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
			}
			t.Cleanup(func() {
				for _, o := range rbac {
					_ = env.Client.Delete(context.Background(), o.DeepCopy())
				}
			})
			g.Eventually(func(g Gomega) {
				for _, call := range calls {
					g.Expect(call.do(ctx, cs, node)).To(Succeed(), "%s: %s", call.component, call.what)
				}
			}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
			for _, call := range stillRefused(other) {
				err := call.do(ctx, cs, node)
				g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a node may not %s, got %v", call.what, err)
			}

			// The next check starts from a cluster without them.
			for _, o := range rbac {
				g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o.DeepCopy()))).To(Succeed())
			}
			g.Eventually(func(g Gomega) {
				for _, call := range calls {
					if !call.byNodeAuthorizer {
						g.Expect(apierrors.IsForbidden(call.do(ctx, cs, node))).To(BeTrue(), "%s: %s", call.component, call.what)
					}
				}
			}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
		})
	}
}

func filterCalls(calls []nodeCall, components ...string) []nodeCall {
	var out []nodeCall
	for _, c := range calls {
		if slices.Contains(components, c.component) {
			out = append(out, c)
		}
	}
	return out
}

func endpointSlice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-"}, AddressType: discoveryv1.AddressTypeIPv4}
}
