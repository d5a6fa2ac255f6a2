package nodeagent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/test/kubeadm"
)

// kubeletFiles writes what a joined Windows kubelet has: its client
// certificate and key in one PEM (kubelet-client-current.pem) and the
// cluster CA, in a directory standing in for C:\, and returns kubelet.conf
// naming them by their Windows paths and a ReadFile that resolves those
// paths, counting its calls.
func kubeletFiles(t *testing.T, nodeName string) (kubeconfig []byte, readFile func(string) ([]byte, error), reads *atomic.Int32) {
	g := NewWithT(t)
	user, err := cluster.Env.AddUser("system:node:"+nodeName, kubeadm.NodesGroup)
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	local := map[string]string{
		layout.KubeletClientCert: filepath.Join(dir, "kubelet-client-current.pem"),
		layout.CACert:            filepath.Join(dir, "ca.crt"),
	}
	g.Expect(os.WriteFile(local[layout.KubeletClientCert], append(append([]byte{}, user.CertData...), user.KeyData...), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(local[layout.CACert], cluster.CA, 0o600)).To(Succeed())

	kubeconfig, err = kubeadm.KubeletKubeconfig(cluster.Server)
	g.Expect(err).NotTo(HaveOccurred())
	reads = &atomic.Int32{}
	readFile = func(p string) ([]byte, error) {
		reads.Add(1)
		if l, ok := local[p]; ok {
			return os.ReadFile(l)
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return kubeconfig, readFile, reads
}

func TestWaitForNode(t *testing.T) {
	t.Run("honours the context before the Node exists", func(t *testing.T) {
		g := NewWithT(t)
		kubeconfig, readFile, reads := kubeletFiles(t, "win-wait-1")
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := discovery.WaitForNode(ctx, kubeconfig, "win-wait-1", 200*time.Millisecond, readFile)
		took := time.Since(start)
		t.Logf("WaitForNode took %s: %v", took.Round(time.Millisecond), err)
		g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "error: %v", err)
		// The last GET authenticated as the node and was authorised: the
		// Node was simply not there.
		g.Expect(err.Error()).To(ContainSubstring(`nodes "win-wait-1" not found`))
		g.Expect(took).To(BeNumerically("<", 2500*time.Millisecond))
		g.Expect(reads.Load()).To(BeNumerically(">=", 3), "the kubeconfig's files are read through the hook")
	})

	t.Run("returns once the Node is created", func(t *testing.T) {
		g := NewWithT(t)
		kubeconfig, readFile, _ := kubeletFiles(t, "win-wait-2")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- discovery.WaitForNode(ctx, kubeconfig, "win-wait-2", 200*time.Millisecond, readFile) }()

		time.Sleep(500 * time.Millisecond)
		g.Consistently(done).ShouldNot(Receive(), "WaitForNode returned before the Node existed")
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-wait-2"}}
		g.Expect(cluster.Env.Client.Create(ctx, node)).To(Succeed())
		defer func() { g.Expect(cluster.Env.Client.Delete(context.Background(), node)).To(Succeed()) }()
		created := time.Now()

		var err error
		g.Eventually(done, 5*time.Second).Should(Receive(&err))
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("WaitForNode returned %s after the Node was created (%s in all)", time.Since(created).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	})

	t.Run("reads a certificate the kubelet writes while it waits", func(t *testing.T) {
		g := NewWithT(t)
		kubeconfig, readFile, _ := kubeletFiles(t, "win-wait-3")
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-wait-3"}}
		g.Expect(cluster.Env.Client.Create(context.Background(), node)).To(Succeed())
		defer func() { g.Expect(cluster.Env.Client.Delete(context.Background(), node)).To(Succeed()) }()
		var written atomic.Bool
		notYet := func(p string) ([]byte, error) {
			if p == layout.KubeletClientCert && !written.Load() {
				return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
			}
			return readFile(p)
		}

		short, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		err := discovery.WaitForNode(short, kubeconfig, "win-wait-3", 200*time.Millisecond, notYet)
		g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "error: %v", err)
		g.Expect(err.Error()).To(ContainSubstring(layout.KubeletClientCert), "the error names the missing file")

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		time.AfterFunc(500*time.Millisecond, func() { written.Store(true) })
		g.Expect(discovery.WaitForNode(ctx, kubeconfig, "win-wait-3", 200*time.Millisecond, notYet)).To(Succeed())
	})
}
