package cpi

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	nodecontroller "k8s.io/cloud-provider/controllers/node"
	"k8s.io/cloud-provider/controllers/nodelifecycle"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
)

// The intervals of a cloud controller manager's defaults
// (k8s.io/cloud-provider/options): the node controller's status update
// and the lifecycle controller's monitor period.
const (
	nodeStatusUpdateFrequency = 5 * time.Minute
	nodeMonitorPeriod         = 5 * time.Second
)

// Run runs the cloud node controller and the cloud node lifecycle
// controller against the cluster cfg reaches, with the cloud, until stop
// is called.
func Run(ctx context.Context, cfg *rest.Config, cloud *Cloud) (stop func(), err error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "vsphere-cloud-controller-manager (simulated)"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	nodes := factory.Core().V1().Nodes()
	nc, err := nodecontroller.NewCloudNodeController(nodes, cs, cloud, nodeStatusUpdateFrequency, 1, 1)
	if err != nil {
		return nil, err
	}
	lc, err := nodelifecycle.NewCloudNodeLifecycleController(nodes, cs, cloud, nodeMonitorPeriod)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	metrics := controllersmetrics.NewControllerManagerMetrics("cloud-controller-manager")
	var wg sync.WaitGroup
	factory.Start(ctx.Done())
	wg.Go(func() { nc.RunWithContext(ctx, metrics) })
	wg.Go(func() { lc.Run(ctx, metrics) })
	return func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cloud.Logout(ctx)
	}, nil
}
