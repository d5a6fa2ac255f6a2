package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
)

// Where a joining node reports its progress in the cluster it joins: the
// ConfigMap named after the node in ProgressNamespace, key ProgressKey. The
// management cluster reads it through its connection to the workload
// cluster; no cloud API is involved.
const (
	ProgressNamespace = "capwin-node-bootstrap"
	ProgressKey       = "progress"
)

// ProgressGroup is the group a node's bootstrap token carries (among its
// auth-extra-groups) so that RBAC can let it patch its own progress
// ConfigMap and no other.
func ProgressGroup(nodeName string) string { return "system:bootstrappers:capwin:" + nodeName }

// ProgressWriter writes a node's progress with its bootstrap token, over the
// CA that discovery pinned: the only credentials a node has before it
// joined, sent only to a control plane it has authenticated.
type ProgressWriter struct {
	node   string
	server string
	creds  credentials
}

// NewProgressWriter reads the server, CA and token from the kubelet's
// bootstrap kubeconfig that the agent wrote after discovery.
func NewProgressWriter(bootstrapKubeconfig []byte, nodeName string) (*ProgressWriter, error) {
	cfg, err := clientcmd.Load(bootstrapKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the bootstrap kubeconfig does not parse: %w", err)
	}
	cluster, auth, err := currentEntries(cfg)
	if err != nil {
		return nil, err
	}
	if auth.Token == "" || len(cluster.CertificateAuthorityData) == 0 {
		return nil, errors.New("the bootstrap kubeconfig has no token or no CA data")
	}
	return &ProgressWriter{node: nodeName, server: cluster.Server, creds: credentials{ca: cluster.CertificateAuthorityData, bearer: auth.Token}}, nil
}

// Write replaces the progress with data (JSON). The ConfigMap must exist:
// the management cluster creates it, and RBAC cannot grant creating one
// object by name.
func (w *ProgressWriter) Write(ctx context.Context, data []byte) error {
	c, err := newClient(w.server, w.creds)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{ProgressKey: string(data)}})
	if err != nil {
		return err
	}
	err = c.Patch(types.MergePatchType).Namespace(ProgressNamespace).Resource("configmaps").Name(w.node).
		Body(patch).MaxRetries(0).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("patching ConfigMap %s/%s at %s: %w", ProgressNamespace, w.node, w.server, err)
	}
	return nil
}
