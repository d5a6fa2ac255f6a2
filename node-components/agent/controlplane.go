package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// KubeadmControlPlane is the ControlPlane of a kubeadm cluster: token
// discovery as kubeadm join does it, and the Node read with the kubelet's
// own credentials.
type KubeadmControlPlane struct {
	// Options tune discovery; the zero value is kubeadm's. Its DialContext
	// also makes the connections of WaitForNode and of the method
	// ReportToCluster.
	Options discovery.Options
	// NodePoll is how often WaitForNode looks for the Node; 2 s when zero.
	NodePoll time.Duration
}

// Discover runs kubeadm's token discovery. Its errors are discovery's; the
// discovery phase tells those that may clear up (discovery.Retryable).
func (k KubeadmControlPlane) Discover(ctx context.Context, join nodeconfig.Join) (*Discovered, error) {
	r, err := discovery.Discover(ctx, join, k.Options)
	if err != nil {
		return nil, err
	}
	return &Discovered{Server: r.Server, CACert: r.CACert, KubeletConfig: r.KubeletConfig}, nil
}

// ReportToCluster is the Agent's ClusterProgress for a kubeadm cluster: the
// progress goes to ConfigMap configMap (the configuration's
// join.progressConfigMap) in discovery.ProgressNamespace, written with the
// bootstrap token over the CA in bootstrapKubeconfig.
func ReportToCluster(bootstrapKubeconfig []byte, configMap string) (Reporter, error) {
	return KubeadmControlPlane{}.ReportToCluster(bootstrapKubeconfig, configMap)
}

// ReportToCluster is the package's ReportToCluster whose connections
// k.Options.DialContext makes.
func (k KubeadmControlPlane) ReportToCluster(bootstrapKubeconfig []byte, configMap string) (Reporter, error) {
	w, err := k.Options.NewProgressWriter(bootstrapKubeconfig, configMap)
	if err != nil {
		return nil, err
	}
	return clusterReporter{w}, nil
}

type clusterReporter struct{ w *discovery.ProgressWriter }

func (clusterReporter) Name() string {
	return "the cluster (ConfigMap " + discovery.ProgressNamespace + ")"
}

func (c clusterReporter) Report(ctx context.Context, p Progress) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return c.w.Write(ctx, data)
}

// WaitForNode polls for the Node every NodePoll (2 s when zero).
func (k KubeadmControlPlane) WaitForNode(ctx context.Context, kubeconfig []byte, readFile func(string) ([]byte, error), nodeName string) error {
	return k.Options.WaitForNode(ctx, kubeconfig, nodeName, k.NodePoll, readFile)
}
