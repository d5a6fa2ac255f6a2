package envtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	addonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1" //nolint:staticcheck // Cluster API's conversion webhooks need it
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"  //nolint:staticcheck // Cluster API's conversion webhooks need it
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"    // the ClusterClass reconciler watches ExtensionConfigs
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterclass"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterresourceset"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterresourcesetbinding"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	topologycluster "sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster"
	topologymachinedeployment "sigs.k8s.io/cluster-api/core/reconcilers/topology/machinedeployment"
	topologymachineset "sigs.k8s.io/cluster-api/core/reconcilers/topology/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/index"
)

// enableClusterTopology turns on Cluster API's ClusterTopology feature
// gate, as `clusterctl init` does with CLUSTER_TOPOLOGY=true: the Cluster
// webhook admits a Cluster with a topology only with it. The gate is the
// process's, as in Cluster API's manager.
func enableClusterTopology() error {
	return feature.MutableGates.Set(string(feature.ClusterTopology) + "=true")
}

// SetupCoreReconcilers registers the real Cluster API core reconcilers
// (Cluster, Machine, MachineSet, MachineDeployment, MachineHealthCheck,
// ClusterResourceSet and its binding), with the ClusterTopology feature
// gate on the ClusterClass and topology reconcilers (Cluster topology,
// and the MachineDeployment and MachineSet ones that delete a topology's
// templates), the cache indexes they look Machines up by, and the
// ClusterCache they reach workload clusters through, as Cluster API's own
// manager does. capwin's reconcilers get the returned ClusterCache.
func SetupCoreReconcilers(ctx context.Context, mgr ctrl.Manager) (clustercache.ClusterCache, error) {
	const name = "capwin-envtest-capi"
	// The ClusterClass reconciler watches ExtensionConfigs, of Runtime
	// SDK's API.
	if err := errors.Join(enableClusterTopology(), runtimev1.AddToScheme(mgr.GetScheme())); err != nil {
		return nil, err
	}
	// Without them the Machine controller cannot map a Node event to its
	// Machine (by nodeRef name or provider ID) and a Machine waits for its
	// next reconcile to find its Node.
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return nil, fmt.Errorf("adding Cluster API's indexes: %w", err)
	}
	secretClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, fmt.Errorf("creating the secret caching client: %w", err)
	}
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretClient,
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions(name, 100, 200),
	}, controller.Options{MaxConcurrentReconciles: 10})
	if err != nil {
		return nil, fmt.Errorf("setting up the ClusterCache: %w", err)
	}
	// The grace periods are Cluster API's defaults (its manager's flags).
	opts := controller.Options{MaxConcurrentReconciles: 10}
	steps := []struct {
		name  string
		setup func() error
	}{
		{"Cluster", func() error {
			return (&cluster.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
				RemoteConnectionGracePeriod: 50 * time.Second}).SetupWithManager(ctx, mgr, opts)
		}},
		{"Machine", func() error {
			return (&machine.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
				RemoteConditionsGracePeriod: 5 * time.Minute}).SetupWithManager(ctx, mgr, opts)
		}},
		{"MachineSet", func() error {
			return (&machineset.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc}).SetupWithManager(ctx, mgr, opts)
		}},
		{"MachineDeployment", func() error {
			return (&machinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(ctx, mgr, opts)
		}},
		{"MachineHealthCheck", func() error {
			return (&machinehealthcheck.Reconciler{Client: mgr.GetClient(), ClusterCache: cc}).SetupWithManager(ctx, mgr, opts)
		}},
		{"ClusterResourceSet", func() error {
			secrets, err := partialSecretCache(mgr)
			if err != nil {
				return err
			}
			return (&clusterresourceset.Reconciler{Client: mgr.GetClient(), ClusterCache: cc}).SetupWithManager(ctx, mgr, opts, secrets)
		}},
		{"ClusterResourceSetBinding", func() error {
			return (&clusterresourcesetbinding.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, opts)
		}},
		{"ClusterClass", func() error {
			return (&clusterclass.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, opts)
		}},
		{"topology/cluster", func() error {
			return (&topologycluster.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc}).SetupWithManager(ctx, mgr, opts)
		}},
		{"topology/machinedeployment", func() error {
			return (&topologymachinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(ctx, mgr, opts)
		}},
		{"topology/machineset", func() error {
			return (&topologymachineset.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(ctx, mgr, opts)
		}},
	}
	for _, s := range steps {
		if err := s.setup(); err != nil {
			return nil, fmt.Errorf("setting up the Cluster API %s reconciler: %w", s.name, err)
		}
	}
	return cc, nil
}

// partialSecretCache is the metadata-only Secret cache the ClusterResourceSet
// reconciler watches Secrets through, made as Cluster API's manager makes it.
func partialSecretCache(mgr ctrl.Manager) (ctrlcache.Cache, error) {
	c, err := ctrlcache.New(mgr.GetConfig(), ctrlcache.Options{
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		HTTPClient:       mgr.GetHTTPClient(),
		DefaultTransform: ctrlcache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the metadata-only Secret cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return c, nil
}

// SetupCoreWebhooks registers Cluster API core's admission webhooks for the
// kinds a cluster of capwin is made of (Cluster, ClusterClass, Machine,
// MachineSet, MachineDeployment, MachineHealthCheck, ClusterResourceSet
// and its binding: the defaulting and validation Cluster API's own manager
// serves, with the ClusterTopology feature gate on)
// with mgr's webhook server; the environment must have been started with
// Options.CAPIWebhooks. Their conversion webhooks need the older API
// versions, which are added to the manager's scheme.
func SetupCoreWebhooks(mgr ctrl.Manager, cc clustercache.ClusterCache) error {
	if err := errors.Join(enableClusterTopology(), clusterv1beta1.AddToScheme(mgr.GetScheme()), addonsv1beta1.AddToScheme(mgr.GetScheme())); err != nil {
		return err
	}
	return errors.Join(
		(&coreadmission.Cluster{Client: mgr.GetClient(), ClusterCacheReader: cc}).SetupWebhookWithManager(mgr),
		(&coreadmission.ClusterClass{Client: mgr.GetClient()}).SetupWebhookWithManager(mgr),
		(&coreadmission.Machine{}).SetupWebhookWithManager(mgr),
		(&coreadmission.MachineSet{}).SetupWebhookWithManager(mgr),
		(&coreadmission.MachineDeployment{}).SetupWebhookWithManager(mgr),
		(&coreadmission.MachineHealthCheck{}).SetupWebhookWithManager(mgr),
		(&coreadmission.ClusterResourceSet{}).SetupWebhookWithManager(mgr),
		(&coreadmission.ClusterResourceSetBinding{}).SetupWebhookWithManager(mgr),
	)
}
