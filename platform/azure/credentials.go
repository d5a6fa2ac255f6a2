package azure

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"

	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/sharedread"
)

// The kinds of Azure identity an identity Secret's type key names.
const (
	// ServicePrincipal logs in with tenantID, clientID and clientSecret.
	ServicePrincipal = "ServicePrincipal"
	// WorkloadIdentity logs in as tenantID and clientID with the
	// manager's federated service account token (the file the Azure
	// workload identity webhook names in AZURE_FEDERATED_TOKEN_FILE).
	WorkloadIdentity = "WorkloadIdentity"
	// ManagedIdentity logs in as the user-assigned managed identity
	// clientID of the VM or node the manager runs on.
	ManagedIdentity = "ManagedIdentity"
)

// Credentials are an Azure login, read from an identity Secret.
type Credentials struct {
	// Type is ServicePrincipal, WorkloadIdentity or ManagedIdentity.
	Type         string
	TenantID     string
	ClientID     string
	ClientSecret string
	// TokenFile is the federated token file of a WorkloadIdentity.
	TokenFile string
}

// key identifies the login without holding its secret.
func (c Credentials) key() string {
	h := sha256.Sum256([]byte(c.Type + "\x00" + c.TenantID + "\x00" + c.ClientID + "\x00" + c.ClientSecret + "\x00" + c.TokenFile))
	return hex.EncodeToString(h[:])
}

// CredentialsFrom reads an Azure login from an identity Secret: the key
// type (ServicePrincipal when absent), with tenantID, clientID and
// clientSecret for a service principal, tenantID and clientID for
// workload identity, clientID for a managed identity.
func CredentialsFrom(s *corev1.Secret) (Credentials, error) {
	c := Credentials{Type: string(s.Data["type"])}
	if c.Type == "" {
		c.Type = ServicePrincipal
	}
	switch c.Type {
	case ServicePrincipal:
		v, err := platform.SecretValues(s, "tenantID", "clientID", "clientSecret")
		if err != nil {
			return Credentials{}, err
		}
		c.TenantID, c.ClientID, c.ClientSecret = v[0], v[1], v[2]
	case WorkloadIdentity:
		v, err := platform.SecretValues(s, "tenantID", "clientID")
		if err != nil {
			return Credentials{}, err
		}
		c.TenantID, c.ClientID = v[0], v[1]
		c.TokenFile = os.Getenv("AZURE_FEDERATED_TOKEN_FILE")
		if c.TokenFile == "" {
			return Credentials{}, fmt.Errorf("%w: Secret %s/%s is of type WorkloadIdentity, but the manager has no federated token (AZURE_FEDERATED_TOKEN_FILE is not set: label its service account and pod for Azure workload identity)", platform.ErrCredentialsNotFound, s.Namespace, s.Name)
		}
	case ManagedIdentity:
		v, err := platform.SecretValues(s, "clientID")
		if err != nil {
			return Credentials{}, err
		}
		c.ClientID = v[0]
	default:
		return Credentials{}, fmt.Errorf("%w: Secret %s/%s has type %q; it must be %s, %s or %s", platform.ErrCredentialsNotFound, s.Namespace, s.Name, c.Type, ServicePrincipal, WorkloadIdentity, ManagedIdentity)
	}
	return c, nil
}

// Options are how the Azure clients are made.
type Options struct {
	// ClientOptions are given to every ARM client; nil for Azure's public
	// cloud with capwin's retry settings (RetryOptions). The simulation
	// sets its transport here.
	ClientOptions *arm.ClientOptions
	// NewCredential makes the token credential of a login; azidentity's
	// when nil.
	NewCredential func(Credentials) (azcore.TokenCredential, error)
	// WritesPerSecond limits the writes (every request but GET and HEAD,
	// retries included) of one login in one subscription, so that capwin
	// stays within ARM's write budget instead of being throttled: ARM
	// refills about 10 write tokens a second for a principal in a
	// subscription. 0 means DefaultWritesPerSecond; below 0, no limit.
	WritesPerSecond float64
	// WriteBurst is how many writes may go at once before the rate
	// applies; 0 means DefaultWriteBurst.
	WriteBurst int
}

const (
	// DefaultWritesPerSecond is Options.WritesPerSecond's default: ARM's
	// refill rate of writes for a principal in a subscription.
	DefaultWritesPerSecond = 10
	// DefaultWriteBurst is Options.WriteBurst's default, well under ARM's
	// bucket, which the cloud provider and people using the same
	// principal draw from too.
	DefaultWriteBurst = 5
)

// RetryOptions are capwin's settings for the SDK's retries: a throttled or
// failing call is retried in the call only while Azure asks for at most a
// few seconds; a longer Retry-After comes back to the reconciler, which
// requeues after it instead of holding a worker.
func RetryOptions() policy.RetryOptions {
	return policy.RetryOptions{
		MaxRetries:    2,
		RetryDelay:    time.Second,
		MaxRetryDelay: 5 * time.Second,
		TryTimeout:    30 * time.Second,
	}
}

// Clients holds one set of ARM clients per login and subscription, shared
// by every cluster that uses it, so that tokens are fetched once.
type Clients struct {
	opts Options
	mu   sync.Mutex
	sets map[string]*clientSet
}

// NewClients returns an empty cache.
func NewClients(opts Options) *Clients {
	return &Clients{opts: opts, sets: map[string]*clientSet{}}
}

// clientSet is the ARM clients of one login in one subscription.
type clientSet struct {
	groups     *armresources.ResourceGroupsClient
	resources  *armresources.Client
	vms        *armcompute.VirtualMachinesClient
	disks      *armcompute.DisksClient
	interfaces *armnetwork.InterfacesClient
	vnets      *armnetwork.VirtualNetworksClient
	subnets    *armnetwork.SubnetsClient
	nsgs       *armnetwork.SecurityGroupsClient
	routes     *armnetwork.RouteTablesClient
	publicIPs  *armnetwork.PublicIPAddressesClient
	lbs        *armnetwork.LoadBalancersClient
	// views are the recent reads of resource groups, shared by the
	// resyncs of their machines.
	views *sharedread.Reads[*groupView]
}

// get returns the clients of a login in a subscription.
func (c *Clients) get(creds Credentials, subscriptionID string) (*clientSet, error) {
	key := creds.key() + "/" + subscriptionID
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sets[key]; ok {
		return s, nil
	}
	cred, err := c.credential(creds)
	if err != nil {
		return nil, err
	}
	opts := &arm.ClientOptions{ClientOptions: policy.ClientOptions{Retry: RetryOptions()}}
	if c.opts.ClientOptions != nil {
		o := *c.opts.ClientOptions
		opts = &o
	}
	if limit := c.opts.writeLimit(); limit != nil {
		// Per retry: a retried write is a write to ARM too.
		opts.PerRetryPolicies = append(slices.Clone(opts.PerRetryPolicies), limit)
	}
	resources, err := armresources.NewClientFactory(subscriptionID, cred, opts)
	if err != nil {
		return nil, err
	}
	compute, err := armcompute.NewClientFactory(subscriptionID, cred, opts)
	if err != nil {
		return nil, err
	}
	network, err := armnetwork.NewClientFactory(subscriptionID, cred, opts)
	if err != nil {
		return nil, err
	}
	s := &clientSet{
		groups:     resources.NewResourceGroupsClient(),
		resources:  resources.NewClient(),
		vms:        compute.NewVirtualMachinesClient(),
		disks:      compute.NewDisksClient(),
		interfaces: network.NewInterfacesClient(),
		vnets:      network.NewVirtualNetworksClient(),
		subnets:    network.NewSubnetsClient(),
		nsgs:       network.NewSecurityGroupsClient(),
		routes:     network.NewRouteTablesClient(),
		publicIPs:  network.NewPublicIPAddressesClient(),
		lbs:        network.NewLoadBalancersClient(),
		views:      newViews(),
	}
	c.sets[key] = s
	return s, nil
}

// credential makes the token credential of a login.
func (c *Clients) credential(creds Credentials) (azcore.TokenCredential, error) {
	if c.opts.NewCredential != nil {
		return c.opts.NewCredential(creds)
	}
	var (
		cred azcore.TokenCredential
		err  error
	)
	switch creds.Type {
	case WorkloadIdentity:
		cred, err = azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{TenantID: creds.TenantID, ClientID: creds.ClientID, TokenFilePath: creds.TokenFile})
	case ManagedIdentity:
		cred, err = azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(creds.ClientID)})
	default:
		cred, err = azidentity.NewClientSecretCredential(creds.TenantID, creds.ClientID, creds.ClientSecret, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: making the %s credential: %w", platform.ErrCredentialsNotFound, creds.Type, err)
	}
	return cred, nil
}

// writeLimit is the policy that holds writes to Options.WritesPerSecond,
// or nil for no limit.
func (o Options) writeLimit() policy.Policy {
	perSecond, burst := o.WritesPerSecond, o.WriteBurst
	if perSecond < 0 {
		return nil
	}
	if perSecond == 0 {
		perSecond = DefaultWritesPerSecond
	}
	if burst <= 0 {
		burst = DefaultWriteBurst
	}
	return &writeLimit{limiter: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// writeLimit waits for a token before each write.
type writeLimit struct {
	limiter *rate.Limiter
}

func (w *writeLimit) Do(req *policy.Request) (*http.Response, error) {
	switch req.Raw().Method {
	case http.MethodGet, http.MethodHead:
	default:
		if err := w.limiter.Wait(req.Raw().Context()); err != nil {
			return nil, err
		}
	}
	return req.Next()
}
