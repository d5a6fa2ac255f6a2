package apiserver

import (
	"fmt"
	"time"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
)

// ClusterCacheRetry is how soon a test's ClusterCache tries a failed
// connection to a workload cluster again: 30 s by default, as long as many
// tests wait.
const ClusterCacheRetry = 2 * time.Second

// RetrySoon makes cc try a failed connection again after ClusterCacheRetry,
// as Cluster API's own tests do, through a method its ClusterCache has for
// tests only; it says so if that method is gone.
func RetrySoon(cc clustercache.ClusterCache) error {
	r, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) })
	if !ok {
		return fmt.Errorf("the ClusterCache (%T) no longer has SetConnectionCreationRetryInterval", cc)
	}
	r.SetConnectionCreationRetryInterval(ClusterCacheRetry)
	return nil
}
