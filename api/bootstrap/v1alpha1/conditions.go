package v1alpha1

// WindowsKubeadmConfig's conditions and their reasons.
const (
	// WindowsKubeadmConfigReadyCondition summarises the config's other conditions.
	WindowsKubeadmConfigReadyCondition = "Ready"

	// WindowsKubeadmConfigDataSecretAvailableCondition is true once the
	// bootstrap data Secret exists.
	WindowsKubeadmConfigDataSecretAvailableCondition = "DataSecretAvailable"
	// WindowsKubeadmConfigDataSecretAvailableReason means the Secret exists.
	WindowsKubeadmConfigDataSecretAvailableReason = "Available"
	// WindowsKubeadmConfigWaitingForClusterInfrastructureReason means the Cluster's
	// infrastructure is not provisioned, so its API server cannot be reached.
	WindowsKubeadmConfigWaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	// WindowsKubeadmConfigWaitingForControlPlaneInitializedReason means a node can
	// join only once the control plane is initialized.
	WindowsKubeadmConfigWaitingForControlPlaneInitializedReason = "WaitingForControlPlaneInitialized"
	// WindowsKubeadmConfigWaitingForWorkloadClusterReason means the workload
	// cluster's API server cannot be reached to create a bootstrap token.
	WindowsKubeadmConfigWaitingForWorkloadClusterReason = "WaitingForWorkloadCluster"
	// WindowsKubeadmConfigWaitingForInputsReason means an input of the
	// payload (the cluster CA Secret) could not be read yet; it is retried.
	WindowsKubeadmConfigWaitingForInputsReason = "WaitingForInputs"
	// WindowsKubeadmConfigInvalidReason means the config cannot work in its
	// Cluster, or its Machine or Cluster lacks what the payload needs; the
	// message says why.
	WindowsKubeadmConfigInvalidReason = "InvalidConfiguration"
	// WindowsKubeadmConfigPayloadTooLargeReason means the bootstrap data is over
	// the platforms' limit of 65535 bytes, so no Secret is written.
	WindowsKubeadmConfigPayloadTooLargeReason = "PayloadTooLarge"
	// WindowsKubeadmConfigDataSecretConflictReason means a Secret of the
	// config's name, where its bootstrap data goes, is controlled by another
	// object; the message names it. Nothing is written until it is gone.
	WindowsKubeadmConfigDataSecretConflictReason = "DataSecretConflict"
	// WindowsKubeadmConfigDeletingReason means the config is being deleted.
	WindowsKubeadmConfigDeletingReason = "Deleting"

	// WindowsKubeadmConfigBootstrapTokenCondition is true while the node's
	// bootstrap token is valid, and after the node joined.
	WindowsKubeadmConfigBootstrapTokenCondition = "BootstrapTokenReady"
	// WindowsKubeadmConfigTokenValidReason means the token exists and is kept from expiring.
	WindowsKubeadmConfigTokenValidReason = "Valid"
	// WindowsKubeadmConfigTokenNotNeededReason means the node joined; the token is
	// no longer refreshed and expires.
	WindowsKubeadmConfigTokenNotNeededReason = "NodeJoined"
	// WindowsKubeadmConfigTokenErrorReason means the token could not be created or refreshed.
	WindowsKubeadmConfigTokenErrorReason = "Error"
)

// TokenIDAnnotation on the bootstrap data Secret names the bootstrap token
// (its public ID) that the Secret's payload carries, so the token can be
// found again after a restart or a clusterctl move.
const TokenIDAnnotation = "bootstrap.capwin.io/token-id"

// MachineLabel on the objects the bootstrap provider makes in the workload
// cluster for one node (its progress ConfigMap, Role and RoleBinding in
// namespace capwin-node-bootstrap) names the Machine they are for.
const MachineLabel = "capwin.io/machine"
