package discovery

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ReadFileFunc reads a file a kubeconfig names by path. The agent passes
// its host's file system, so the Windows paths the kubelet writes
// (C:\var\lib\kubelet\pki\kubelet-client-current.pem) resolve in tests and
// in the simulator too.
type ReadFileFunc func(path string) ([]byte, error)

// WaitForNode GETs Node nodeName every interval (2 s when zero) with the
// kubelet's own kubeconfig until it exists, or until ctx ends. The files
// kubeconfig names (its CA, client certificate and key, token file) are
// read with readFile (os.ReadFile when nil) on every attempt, so a
// certificate the kubelet writes or rotates meanwhile is picked up. Any
// failed GET is retried: a kubelet's certificate can be refused for a while
// (a Windows clock behind the CA's) and then accepted; when ctx ends the
// error says what the last attempt saw.
func WaitForNode(ctx context.Context, kubeconfig []byte, nodeName string, interval time.Duration, readFile ReadFileFunc) error {
	return Options{}.WaitForNode(ctx, kubeconfig, nodeName, interval, readFile)
}

// WaitForNode is the package's WaitForNode whose connections o.DialContext
// makes.
func (o Options) WaitForNode(ctx context.Context, kubeconfig []byte, nodeName string, interval time.Duration, readFile ReadFileFunc) error {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	if readFile == nil {
		readFile = os.ReadFile
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return fmt.Errorf("waiting for Node %s: the kubelet's kubeconfig does not parse: %w", nodeName, err)
	}
	if _, _, err := currentEntries(cfg); err != nil {
		return fmt.Errorf("waiting for Node %s: %w", nodeName, err)
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", nodeName)
	for {
		err := getNode(ctx, cfg, nodeName, readFile, o.DialContext)
		if err == nil {
			return nil
		}
		log.V(2).Info("Node not there yet", "error", err.Error())
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for Node %s: %w (last attempt: %w)", nodeName, context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

func getNode(ctx context.Context, cfg *clientcmdapi.Config, name string, readFile ReadFileFunc, dial func(ctx context.Context, network, addr string) (net.Conn, error)) error {
	rc, err := restConfigFor(cfg, readFile)
	if err != nil {
		return err
	}
	rc.Dial = dial
	c, err := coreClient(rc)
	if err != nil {
		return err
	}
	return c.Get().Resource("nodes").Name(name).MaxRetries(0).Do(ctx).Into(&corev1.Node{})
}

// currentEntries returns the cluster and user of the current context.
func currentEntries(cfg *clientcmdapi.Config) (*clientcmdapi.Cluster, *clientcmdapi.AuthInfo, error) {
	c := cfg.Contexts[cfg.CurrentContext]
	if c == nil {
		return nil, nil, fmt.Errorf("the kubeconfig's current context %q does not exist", cfg.CurrentContext)
	}
	cluster, user := cfg.Clusters[c.Cluster], cfg.AuthInfos[c.AuthInfo]
	if cluster == nil || user == nil {
		return nil, nil, fmt.Errorf("the kubeconfig's context %q names cluster %q and user %q, which it lacks", cfg.CurrentContext, c.Cluster, c.AuthInfo)
	}
	return cluster, user, nil
}

// restConfigFor makes a client configuration of the current context, with
// every file it names read through readFile and inlined.
func restConfigFor(in *clientcmdapi.Config, readFile ReadFileFunc) (*rest.Config, error) {
	cfg := in.DeepCopy()
	cluster, user, err := currentEntries(cfg)
	if err != nil {
		return nil, err
	}
	inline := func(path *string, data *[]byte) error {
		if *path == "" {
			return nil
		}
		if len(*data) == 0 {
			b, err := readFile(*path)
			if err != nil {
				return fmt.Errorf("reading %s, which the kubelet's kubeconfig names: %w", *path, err)
			}
			*data = b
		}
		*path = ""
		return nil
	}
	if err := inline(&cluster.CertificateAuthority, &cluster.CertificateAuthorityData); err != nil {
		return nil, err
	}
	if err := inline(&user.ClientCertificate, &user.ClientCertificateData); err != nil {
		return nil, err
	}
	if err := inline(&user.ClientKey, &user.ClientKeyData); err != nil {
		return nil, err
	}
	if user.TokenFile != "" {
		var tok []byte
		if err := inline(&user.TokenFile, &tok); err != nil {
			return nil, err
		}
		if user.Token == "" {
			user.Token = string(tok)
		}
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubelet's kubeconfig: %w", err)
	}
	if rc.Timeout == 0 {
		rc.Timeout = requestTimeout
	}
	rc.UserAgent = userAgent
	return rc, nil
}
