package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/capwin/capwin/node-components/report"
)

// Where a joining node reports its progress in the cluster it joins: the
// ConfigMap its configuration names (join.progressConfigMap; the bootstrap
// provider uses the Machine's name) in ProgressNamespace, key ProgressKey.
// They are the report's own (node-components/report), which the
// management cluster reads through its connection to the workload
// cluster; no cloud API is involved.
const (
	ProgressNamespace = report.ConfigMapNamespace
	ProgressKey       = report.ConfigMapKey
)

// ProgressGroup is report.TokenGroup: the group a node's bootstrap token
// carries so that RBAC can let it get and patch its own progress ConfigMap
// and no other.
func ProgressGroup(configMap string) string {
	return report.TokenGroup(configMap)
}

// ProgressWriter writes a node's progress with its bootstrap token, over the
// CA that discovery pinned: the only credentials a node has before it
// joined, sent only to a control plane it has authenticated.
type ProgressWriter struct {
	configMap string
	server    string
	creds     credentials
}

// NewProgressWriter reads the server, CA and token from a bootstrap
// kubeconfig (the kubelet's, that the agent wrote after discovery) and
// writes to ConfigMap configMap in ProgressNamespace, with the default
// dialer.
func NewProgressWriter(bootstrapKubeconfig []byte, configMap string) (*ProgressWriter, error) {
	return Options{}.NewProgressWriter(bootstrapKubeconfig, configMap)
}

// NewProgressWriter is the package's NewProgressWriter whose connections
// o.DialContext makes.
func (o Options) NewProgressWriter(bootstrapKubeconfig []byte, configMap string) (*ProgressWriter, error) {
	if configMap == "" {
		return nil, errors.New("no progress ConfigMap named")
	}
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
	creds := credentials{ca: cluster.CertificateAuthorityData, bearer: auth.Token, dial: o.DialContext}
	return &ProgressWriter{configMap: configMap, server: cluster.Server, creds: creds}, nil
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
	err = c.Patch(types.MergePatchType).Namespace(ProgressNamespace).Resource("configmaps").Name(w.configMap).
		Body(patch).MaxRetries(0).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("patching ConfigMap %s/%s at %s: %w", ProgressNamespace, w.configMap, w.server, err)
	}
	return nil
}
