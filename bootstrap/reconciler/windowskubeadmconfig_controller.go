package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/secret"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/bootstrap/validation"
	"github.com/capwin/capwin/internal/clusterwatch"
	"github.com/capwin/capwin/internal/deleted"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/report"
)

// DefaultTokenTTL covers a slow Windows first boot (image specialisation,
// feature installs, reboots: 30 minutes is not rare) with margin, should the
// controller be down and not refresh the token meanwhile.
const DefaultTokenTTL = 45 * time.Minute

// workloadRetry is how soon an unreachable workload cluster is tried again.
const workloadRetry = 10 * time.Second

// Reconciler turns a WindowsKubeadmConfig into the bootstrap data Secret of
// its Machine, and keeps the node's bootstrap token valid until the node has
// joined.
type Reconciler struct {
	Client       client.Client
	ClusterCache clustercache.ClusterCache

	// TokenTTL is the lifetime of a bootstrap token between refreshes;
	// DefaultTokenTTL when zero.
	TokenTTL time.Duration
	// Now is the clock; time.Now when nil. Tests inject their own.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=windowskubeadmconfigs;windowskubeadmconfigs/status;windowskubeadmconfigs/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// SetupWithManager registers the reconciler, watching Machines and Clusters
// for what it waits on.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.ClusterCache == nil {
		return errors.New("the WindowsKubeadmConfig reconciler needs a Client and a ClusterCache")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bootstrapv1.WindowsKubeadmConfig{}).
		WithOptions(options).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToConfig)).
		// Not on every Cluster status change: only on what configs wait on.
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToConfigs),
			builder.WithPredicates(clusterwatch.WhatMachinesWaitOn())).
		// A new connection to a workload cluster is when waiting configs can
		// create their tokens.
		WatchesRawSource(r.ClusterCache.GetClusterSource("windowskubeadmconfig", r.clusterToConfigs)).
		Complete(r)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) ttl() time.Duration {
	if r.TokenTTL > 0 {
		return r.TokenTTL
	}
	return DefaultTokenTTL
}

// Reconcile follows Cluster API's order: object, owner, finalizer, patch
// helper, paused, deferred status patch, then delete or normal.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)

	config := &bootstrapv1.WindowsKubeadmConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, config); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	machine, err := util.GetOwnerMachine(ctx, r.Client, config.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting the owner Machine: %w", err)
	}
	if machine == nil {
		log.V(2).Info("Waiting for a Machine to own the config")
		return ctrl.Result{}, nil
	}
	log = log.WithValues("Machine", klog.KObj(machine), "Cluster", klog.KRef(machine.Namespace, machine.Spec.ClusterName))
	ctx = ctrl.LoggerInto(ctx, log)

	cluster, err := util.GetClusterByName(ctx, r.Client, machine.Namespace, machine.Spec.ClusterName)
	if err != nil {
		if apierrors.IsNotFound(err) && !config.DeletionTimestamp.IsZero() {
			// Nothing left to revoke a token in.
			removeFinalizer(config)
			return ctrl.Result{}, r.Client.Update(ctx, config)
		}
		return ctrl.Result{}, fmt.Errorf("getting Cluster %s: %w", machine.Spec.ClusterName, err)
	}

	if patched, err := ensureFinalizer(ctx, r.Client, config); err != nil || patched {
		return ctrl.Result{}, err
	}

	helper, err := patch.NewHelper(config, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, config); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	defer func() {
		setReadyCondition(config)
		err := helper.Patch(ctx, config, patch.WithOwnedConditions{Conditions: []string{
			clusterv1.PausedCondition,
			bootstrapv1.WindowsKubeadmConfigReadyCondition,
			bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition,
			bootstrapv1.WindowsKubeadmConfigBootstrapTokenCondition,
		}})
		if err := deleted.IgnoreGone(config, err); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	if !config.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, config, machine, cluster)
	}
	return r.reconcileNormal(ctx, config, machine, cluster)
}

func (r *Reconciler) reconcileNormal(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	// The data Secret is found by name, not by status, so it is found again
	// after a restart or a clusterctl move.
	data := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: config.Name}, data)
	switch {
	case err == nil:
		if conflict := notConfigsData(config, data); conflict != "" {
			// Not this config's data: no name in status for Cluster API
			// to hand a VM, and no token.
			setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigDataSecretConflictReason, conflict)
			return ctrl.Result{RequeueAfter: time.Minute}, nil
		}
		if err := r.ensureDataSecretController(ctx, config, data); err != nil {
			return ctrl.Result{}, err
		}
		setDataSecretAvailable(config, data.Name)
		return r.reconcileToken(ctx, config, machine, cluster, data)
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("getting the bootstrap data Secret: %w", err)
	}

	if !ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) {
		setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigWaitingForClusterInfrastructureReason,
			"Waiting for the Cluster's infrastructure to be provisioned")
		return ctrl.Result{}, nil
	}
	if !clusterwatch.ControlPlaneInitialized(cluster) {
		setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigWaitingForControlPlaneInitializedReason,
			"Waiting for the control plane to be initialized: a Windows node joins a running control plane")
		return ctrl.Result{}, nil
	}

	in, err := r.payloadInput(ctx, config, machine, cluster)
	if err != nil {
		return r.inputError(config, err)
	}
	// Check the rendered size with a placeholder of the token's length before
	// creating a token that would go unused.
	in.Token = "000000.0000000000000000"
	p, err := payload.Render(in)
	if err != nil {
		return r.inputError(config, err)
	}
	if err := p.CheckSize(); err != nil {
		setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigPayloadTooLargeReason,
			fmt.Sprintf("The bootstrap data is %d bytes, over the platforms' %d byte user-data limit: shrink spec.files and the commands, or fetch large files at boot", len(p.Script), payload.MaxSize))
		return ctrl.Result{}, nil
	}
	return r.createDataSecret(ctx, config, cluster, in)
}

// createDataSecret creates the node's bootstrap token in the workload
// cluster and writes the data Secret that carries it.
func (r *Reconciler) createDataSecret(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, cluster *clusterv1.Cluster, in payload.Input) (ctrl.Result, error) {
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(cluster))
	if err != nil {
		setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigWaitingForWorkloadClusterReason,
			"Waiting for a connection to the workload cluster to create a bootstrap token")
		return ctrl.Result{RequeueAfter: workloadRetry}, nil
	}
	return r.writeDataWithNewToken(ctx, config, cluster, remote, in)
}

// writeDataWithNewToken creates a bootstrap token for the node and writes
// the data Secret whose payload carries it. A token whose data Secret was
// not written is deleted again at once: no node will be given it, yet it
// would let anyone holding it join the cluster until it expired, and every
// retry makes another. Should the write have happened after all (an answer
// lost on the way back), the next reconcile finds the data Secret naming a
// missing token and replaces it.
func (r *Reconciler) writeDataWithNewToken(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, cluster *clusterv1.Cluster, remote client.Client, in payload.Input) (ctrl.Result, error) {
	token, err := r.newNodeToken(ctx, config, remote, cluster, in.ProgressConfigMap)
	if err != nil {
		return ctrl.Result{}, err
	}
	in.Token = token
	p, err := payload.Render(in)
	if err != nil {
		deleteUnusedToken(ctx, remote, tokenID(token))
		return r.invalid(config, err)
	}
	if err := r.writeDataSecret(ctx, config, cluster, p, tokenID(token)); err != nil {
		deleteUnusedToken(ctx, remote, tokenID(token))
		return ctrl.Result{}, err
	}
	setDataSecretAvailable(config, config.Name)
	setTokenCondition(config, metav1.ConditionTrue, bootstrapv1.WindowsKubeadmConfigTokenValidReason, "")
	return ctrl.Result{RequeueAfter: r.ttl() / 3}, nil
}

// reconcileToken keeps the node's bootstrap token from expiring until the
// Machine has a Node, and replaces it when it is gone before that.
func (r *Reconciler) reconcileToken(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster, data *corev1.Secret) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if machine.Status.NodeRef.IsDefined() {
		setTokenCondition(config, metav1.ConditionTrue, bootstrapv1.WindowsKubeadmConfigTokenNotNeededReason,
			"The node joined; its bootstrap token is no longer refreshed and expires")
		return ctrl.Result{}, nil
	}
	id := data.Annotations[bootstrapv1.TokenIDAnnotation]
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(cluster))
	if err != nil {
		setTokenCondition(config, metav1.ConditionUnknown, bootstrapv1.WindowsKubeadmConfigWaitingForWorkloadClusterReason,
			"Cannot reach the workload cluster to refresh the bootstrap token")
		return ctrl.Result{RequeueAfter: workloadRetry}, nil
	}

	ts, err := tokenSecret(ctx, remote, id)
	if apierrors.IsNotFound(err) || id == "" {
		// The token is gone before the node joined (deleted, or expired
		// while the controller was down): make a new one and rewrite the data
		// for a VM that has not booted yet.
		log.Info("Bootstrap token is missing before the node joined; creating a new one", "tokenID", id)
		return r.replaceToken(ctx, config, machine, cluster, remote)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting bootstrap token %s: %w", id, err)
	}

	expires, err := tokenExpiration(ts)
	now := r.now()
	// Refresh once a sixth of the lifetime has passed, so that the two or
	// three reconciles each lifetime all have a chance to extend it.
	if err != nil || expires.Before(now.Add(r.ttl()*5/6)) {
		newExpiry := now.Add(r.ttl()).UTC().Format(time.RFC3339)
		ts.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(newExpiry)
		if err := remote.Update(ctx, ts); err != nil {
			setTokenCondition(config, metav1.ConditionFalse, bootstrapv1.WindowsKubeadmConfigTokenErrorReason, "Failed to refresh the bootstrap token")
			return ctrl.Result{}, fmt.Errorf("refreshing bootstrap token %s: %w", id, err)
		}
		log.V(2).Info("Refreshed the bootstrap token until the node joins", "tokenID", id, "expires", newExpiry)
	}
	setTokenCondition(config, metav1.ConditionTrue, bootstrapv1.WindowsKubeadmConfigTokenValidReason, "")
	return ctrl.Result{RequeueAfter: r.ttl() / 3}, nil
}

// replaceToken creates a new token for a node that has not joined and
// rewrites the data Secret with it.
func (r *Reconciler) replaceToken(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster, remote client.Client) (ctrl.Result, error) {
	in, err := r.payloadInput(ctx, config, machine, cluster)
	if err != nil {
		return r.inputError(config, err)
	}
	return r.writeDataWithNewToken(ctx, config, cluster, remote, in)
}

// newNodeToken makes sure the node can report its progress into the
// ConfigMap configMap (the Machine's name), then creates its bootstrap
// token with that ConfigMap's group. A failure sets BootstrapTokenReady.
func (r *Reconciler) newNodeToken(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, remote client.Client, cluster *clusterv1.Cluster, configMap string) (string, error) {
	if err := ensureProgressAccess(ctx, remote, cluster.Name, configMap); err != nil {
		setTokenCondition(config, metav1.ConditionFalse, bootstrapv1.WindowsKubeadmConfigTokenErrorReason,
			fmt.Sprintf("Failed to create the node's progress ConfigMap, Role and RoleBinding %s/%s in the workload cluster", report.ConfigMapNamespace, configMap))
		return "", err
	}
	token, err := newToken(ctx, remote, r.now().Add(r.ttl()), report.TokenGroup(configMap))
	if err != nil {
		setTokenCondition(config, metav1.ConditionFalse, bootstrapv1.WindowsKubeadmConfigTokenErrorReason, "Failed to create a bootstrap token in the workload cluster")
		return "", err
	}
	return token, nil
}

func (r *Reconciler) reconcileDelete(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigDeletingReason, "The config is being deleted")

	data := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: config.Name}, data)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	// Revoke the token and remove the node's progress objects if the
	// cluster can be reached; an unreachable or deleted cluster lets the
	// token expire on its own.
	if remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(cluster)); err == nil {
		// Only the token the config's own data names: a Secret of its
		// name that is not its data names another's, if any.
		if id := data.Annotations[bootstrapv1.TokenIDAnnotation]; id != "" && notConfigsData(config, data) == "" {
			if err := deleteToken(ctx, remote, id); err != nil {
				return ctrl.Result{}, err
			}
			log.V(2).Info("Deleted the bootstrap token", "tokenID", id)
		}
		if err := deleteProgressAccess(ctx, remote, machine.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	removeFinalizer(config)
	return ctrl.Result{}, nil
}

// invalid reports a configuration that cannot work; it is not retried until
// something changes.
func (r *Reconciler) invalid(config *bootstrapv1.WindowsKubeadmConfig, err error) (ctrl.Result, error) {
	setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigInvalidReason, err.Error())
	return ctrl.Result{}, nil
}

// transientError is a failure to read an input that may well be there on a
// later try (a Secret not created yet, an API error).
type transientError struct{ error }

func (e transientError) Unwrap() error { return e.error }

// inputError reports why the payload's inputs could not be gathered:
// transient errors are retried with backoff, the rest wait for a change.
func (r *Reconciler) inputError(config *bootstrapv1.WindowsKubeadmConfig, err error) (ctrl.Result, error) {
	var t transientError
	if errors.As(err, &t) {
		setDataSecretNotAvailable(config, bootstrapv1.WindowsKubeadmConfigWaitingForInputsReason, err.Error())
		return ctrl.Result{}, err
	}
	return r.invalid(config, err)
}

// payloadInput gathers what the node configuration is computed from: the
// Cluster's endpoint, network and CA, and the Machine's Kubernetes version.
// Like Cluster API's kubeadm bootstrap provider it reads no infrastructure
// object: the node takes its name from the computer name the infrastructure
// provider gave it, the kubelet labels the Node with the host's Windows
// build, and the node checks its reserved memory against its own.
func (r *Reconciler) payloadInput(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster) (payload.Input, error) {
	spec := config.Spec.DeepCopy()
	spec.Default()
	if errs := validation.ValidateConfigForCluster(spec, cluster, field.NewPath("spec")); len(errs) > 0 {
		return payload.Input{}, errs.ToAggregate()
	}
	ep := cluster.Spec.ControlPlaneEndpoint
	if !ep.IsValid() {
		return payload.Input{}, fmt.Errorf("the Cluster %s has no spec.controlPlaneEndpoint", cluster.Name)
	}
	if machine.Spec.Version == "" {
		return payload.Input{}, fmt.Errorf("the Machine %s has no spec.version", machine.Name)
	}
	if err := nodeconfig.CheckProgressConfigMap(machine.Name); err != nil {
		return payload.Input{}, fmt.Errorf("the Machine's name names its node's progress ConfigMap and bootstrap token group: %w; give the Machine (its MachineDeployment or MachineSet) a shorter name", err)
	}
	in := payload.Input{
		Spec:              spec,
		KubernetesVersion: machine.Spec.Version,
		ControlPlaneHost:  ep.Host,
		ControlPlanePort:  ep.Port,
		PodCIDRs:          cluster.Spec.ClusterNetwork.Pods.CIDRBlocks,
		ServiceCIDRs:      cluster.Spec.ClusterNetwork.Services.CIDRBlocks,
		ProgressConfigMap: machine.Name,
	}
	if len(in.PodCIDRs) == 0 || len(in.ServiceCIDRs) == 0 {
		return payload.Input{}, fmt.Errorf("the Cluster %s must set spec.clusterNetwork.pods and services: Windows nodes exclude them from outbound NAT", cluster.Name)
	}

	ca, err := secret.GetFromNamespacedName(ctx, r.Client, util.ObjectKey(cluster), secret.ClusterCA)
	if err != nil {
		return payload.Input{}, transientError{fmt.Errorf("reading the cluster CA Secret: %w", err)}
	}
	hash, err := payload.CACertHash(ca.Data[secret.TLSCrtDataName])
	if err != nil {
		return payload.Input{}, fmt.Errorf("cluster CA Secret %s: %w", ca.Name, err)
	}
	in.CACertHashes = []string{hash}

	in.FileContent = func(ref bootstrapv1.SecretKeyReference) ([]byte, error) {
		// Transient: nothing watches the Secrets spec.files names, so a
		// Secret created or completed later is found by the retries.
		s := &corev1.Secret{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: ref.Name}, s); err != nil {
			return nil, transientError{err}
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return nil, transientError{fmt.Errorf("the Secret has no key %s", ref.Key)}
		}
		return v, nil
	}
	return in, nil
}

// notConfigsData says why data, the Secret of config's name, is not
// config's bootstrap data, or returns "" when it is: another object
// controls it, or nothing does and it lacks the marks writeDataSecret gives
// (someone's Secret of this name, not to be handed to a VM, nor its token
// annotation followed).
func notConfigsData(config *bootstrapv1.WindowsKubeadmConfig, data *corev1.Secret) string {
	if c := metav1.GetControllerOf(data); c != nil {
		if c.UID == config.UID {
			return ""
		}
		return fmt.Sprintf("Secret %s, where this config's bootstrap data goes, is controlled by %s %s: delete or rename it", data.Name, c.Kind, c.Name)
	}
	if _, token := data.Annotations[bootstrapv1.TokenIDAnnotation]; token && data.Type == clusterv1.ClusterSecretType {
		return ""
	}
	return fmt.Sprintf("Secret %s, where this config's bootstrap data goes, was not written by capwin (type %s with annotation %s): delete or rename it", data.Name, clusterv1.ClusterSecretType, bootstrapv1.TokenIDAnnotation)
}

// ensureDataSecretController makes the config the data Secret's controller
// again when the Secret lost its controller reference (a restore from a
// backup that drops owner references): without it the Secret would outlive
// its config and `clusterctl move` would leave it behind. A Secret of the
// name that something else controls is not the config's to take.
func (r *Reconciler) ensureDataSecretController(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, data *corev1.Secret) error {
	if metav1.GetControllerOf(data) != nil {
		return nil
	}
	patch := client.MergeFrom(data.DeepCopy())
	if err := controllerutil.SetControllerReference(config, data, r.Client.Scheme()); err != nil {
		return fmt.Errorf("making the WindowsKubeadmConfig the controller of its bootstrap data Secret: %w", err)
	}
	if err := r.Client.Patch(ctx, data, patch); err != nil {
		return fmt.Errorf("restoring the owner reference of the bootstrap data Secret: %w", err)
	}
	return nil
}

// writeDataSecret creates or updates the bootstrap data Secret. It logs the
// payload's size and hash, never its content.
func (r *Reconciler) writeDataSecret(ctx context.Context, config *bootstrapv1.WindowsKubeadmConfig, cluster *clusterv1.Cluster, p *payload.Payload, id string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: config.Namespace, Name: config.Name}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, s, func() error {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[clusterv1.ClusterNameLabel] = cluster.Name
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[bootstrapv1.TokenIDAnnotation] = id
		s.Type = clusterv1.ClusterSecretType
		s.Data = map[string][]byte{"value": p.Script, "format": []byte(payload.Format)}
		return controllerutil.SetControllerReference(config, s, r.Client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("writing the bootstrap data Secret: %w", err)
	}
	sum := sha256.Sum256(p.Script)
	ctrl.LoggerFrom(ctx).Info("Wrote the bootstrap data Secret", "Secret", klog.KObj(s), "operation", op,
		"bytes", len(p.Script), "sha256", hex.EncodeToString(sum[:8]), "tokenID", id)
	return nil
}

func machineToConfig(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1.Machine)
	if !ok {
		return nil
	}
	ref := m.Spec.Bootstrap.ConfigRef
	if ref.APIGroup != bootstrapv1.GroupVersion.Group || ref.Kind != "WindowsKubeadmConfig" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}}}
}

func (r *Reconciler) clusterToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	list := &bootstrapv1.WindowsKubeadmConfigList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}

func setDataSecretAvailable(config *bootstrapv1.WindowsKubeadmConfig, name string) {
	config.Status.DataSecretName = name
	config.Status.Initialization.DataSecretCreated = ptr.To(true)
	conditions.Set(config, metav1.Condition{
		Type:   bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition,
		Status: metav1.ConditionTrue,
		Reason: bootstrapv1.WindowsKubeadmConfigDataSecretAvailableReason,
	})
}

func setDataSecretNotAvailable(config *bootstrapv1.WindowsKubeadmConfig, reason, message string) {
	conditions.Set(config, metav1.Condition{
		Type:    bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition,
		Status:  metav1.ConditionFalse,
		Reason:  reason,
		Message: message,
	})
}

func setTokenCondition(config *bootstrapv1.WindowsKubeadmConfig, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(config, metav1.Condition{
		Type:    bootstrapv1.WindowsKubeadmConfigBootstrapTokenCondition,
		Status:  status,
		Reason:  reason,
		Message: message,
	})
}

// setReadyCondition summarises DataSecretAvailable into Ready.
func setReadyCondition(config *bootstrapv1.WindowsKubeadmConfig) {
	_ = conditions.SetSummaryCondition(config, config, bootstrapv1.WindowsKubeadmConfigReadyCondition,
		conditions.ForConditionTypes{bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition},
		conditions.IgnoreTypesIfMissing{bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition},
	)
}
