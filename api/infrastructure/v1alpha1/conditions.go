package v1alpha1

// HybridCluster's conditions and their reasons.
const (
	// HybridClusterReadyCondition summarises the cluster's other conditions.
	HybridClusterReadyCondition = "Ready"

	// HybridClusterPlatformAvailableCondition is true when capwin can log in
	// to the cluster's platform and find where machines go (the vCenter and
	// its datacenter).
	HybridClusterPlatformAvailableCondition = "PlatformAvailable"
	// HybridClusterPlatformAvailableReason means the platform answers and the
	// datacenter exists.
	HybridClusterPlatformAvailableReason = "Available"
	// HybridClusterCredentialsNotFoundReason means the Secret or
	// HybridClusterIdentity named by identityRef, or its Secret, is missing
	// or incomplete.
	HybridClusterCredentialsNotFoundReason = "CredentialsNotFound"
	// HybridClusterIdentityNotAllowedReason means the HybridClusterIdentity
	// does not allow the cluster's namespace.
	HybridClusterIdentityNotAllowedReason = "IdentityNotAllowed"
	// HybridClusterUnreachableReason means the platform (the vCenter) does not answer, or its
	// certificate does not match the thumbprint.
	HybridClusterUnreachableReason = "Unreachable"
	// HybridClusterBadCredentialsReason means the platform refused the login.
	HybridClusterBadCredentialsReason = "BadCredentials"
	// HybridClusterNotFoundReason means where the cluster's machines go
	// does not exist (the vSphere datacenter); the message names it.
	HybridClusterNotFoundReason = "NotFound"
	// HybridClusterDeletingReason means the cluster waits for its machines'
	// VMs to be deleted before it goes.
	HybridClusterDeletingReason = "Deleting"
	// HybridClusterPlatformNotSupportedReason means this build has no
	// implementation of the cluster's platform (a platform a later capwin
	// adds, seen by an older one; this build has vSphere and Azure).
	HybridClusterPlatformNotSupportedReason = "PlatformNotSupported"
	// HybridClusterInvalidReason means the spec names no platform capwin
	// can act on.
	HybridClusterInvalidReason = "InvalidConfiguration"
	// HybridClusterInfrastructureProvisionedCondition is true once what the
	// cluster's machines need is in place: on vSphere at once (capwin
	// makes nothing for a vSphere cluster); on Azure once the resource
	// group, the network and the API server's load balancer are made or
	// found. It keeps its last value while the platform cannot be reached.
	HybridClusterInfrastructureProvisionedCondition = "InfrastructureProvisioned"
	// HybridClusterInfrastructureProvisionedReason means machines can be made.
	HybridClusterInfrastructureProvisionedReason = "Provisioned"
	// HybridClusterProvisioningReason means capwin is making one of the
	// cluster's shared resources (Azure: the resource group, the virtual
	// network, the API server's load balancer); the message names it.
	HybridClusterProvisioningReason = "Provisioning"
	// HybridClusterOperationFailedReason means the platform failed an
	// operation on a shared resource; it is tried again.
	HybridClusterOperationFailedReason = "OperationFailed"
)

// HybridMachine's conditions and their reasons.
const (
	// HybridMachineReadyCondition summarises the machine's other conditions.
	HybridMachineReadyCondition = "Ready"

	// HybridMachineVMProvisionedCondition is true once the VM exists, runs
	// and has its provider ID.
	HybridMachineVMProvisionedCondition = "VMProvisioned"
	// HybridMachineVMProvisionedReason means the VM runs.
	HybridMachineVMProvisionedReason = "Provisioned"
	// HybridMachineNetworkNotAppliedReason means the VM runs, but the guest
	// reports addresses other than the static ones the spec asks for: its
	// guest software did not apply the network metadata. The message names
	// the device and both addresses.
	HybridMachineNetworkNotAppliedReason = "NetworkNotApplied"
	// HybridMachineWaitingForClusterInfrastructureReason means the
	// HybridCluster is not provisioned yet.
	HybridMachineWaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	// HybridMachineWaitingForBootstrapDataReason means the Machine's bootstrap
	// data Secret is not there yet.
	HybridMachineWaitingForBootstrapDataReason = "WaitingForBootstrapData"
	// HybridMachineBootstrapDataFormatMismatchReason means the format of the
	// Machine's bootstrap data is not one the machine's OS runs (for
	// example cloud-config for a Windows machine); no VM is made. The
	// message names the format, the OS and the format expected.
	HybridMachineBootstrapDataFormatMismatchReason = "BootstrapDataFormatMismatch"
	// HybridMachineCreatingReason means the VM is being created (a vSphere
	// clone runs).
	HybridMachineCreatingReason = "Creating"
	// HybridMachineStartingReason means the VM exists and is being
	// configured or powered on.
	HybridMachineStartingReason = "Starting"
	// HybridMachineNotFoundReason means something the spec names (a vSphere
	// template, folder, pool, datastore or network) does not exist; the
	// message names it.
	HybridMachineNotFoundReason = "NotFound"
	// HybridMachineInsufficientCapacityReason means the platform has not
	// the capacity (memory, CPU, disk, quota) the machine needs; it is
	// retried.
	HybridMachineInsufficientCapacityReason = "InsufficientCapacity"
	// HybridMachineVMGoneReason means the VM of a provisioned machine was
	// deleted outside capwin; the Machine must be replaced.
	HybridMachineVMGoneReason = "VMDeleted"
	// HybridMachineOperationFailedReason means a platform operation (a
	// vCenter task) failed; the message gives the platform's words. It is
	// retried with backoff.
	HybridMachineOperationFailedReason = "OperationFailed"
	// HybridMachinePlatformUnavailableReason means the HybridCluster's
	// platform cannot be used now: it cannot be reached or did not answer
	// a call in time, refused the login, or its credentials are missing,
	// unreadable or not allowed for the machine's namespace.
	HybridMachinePlatformUnavailableReason = "PlatformUnavailable"
	// HybridMachineInvalidReason means the machine cannot be made as
	// specified (for example a platform other than its cluster's).
	HybridMachineInvalidReason = "InvalidConfiguration"
	// HybridMachineDeletingReason means the VM is being powered off and destroyed.
	HybridMachineDeletingReason = "Deleting"

	// HybridMachineBootstrapDataClearedCondition is true once the user data
	// (with its bootstrap token) is removed from the VM after the node joined.
	HybridMachineBootstrapDataClearedCondition = "BootstrapDataCleared"
	// HybridMachineBootstrapDataClearedReason means the user data is gone.
	HybridMachineBootstrapDataClearedReason = "Cleared"
	// HybridMachineBootstrapDataKeptReason: the platform keeps the VM's
	// bootstrap data where capwin cannot remove it (Azure's customData);
	// the message says where.
	HybridMachineBootstrapDataKeptReason = "KeptByPlatform"
	// HybridMachineWaitingForNodeReason means the node has not joined yet.
	HybridMachineWaitingForNodeReason = "WaitingForNode"
	// HybridMachineClearingReason means the node joined and the platform
	// operation that removes the user data runs (status.operation).
	HybridMachineClearingReason = "Clearing"

	// HybridMachineNodeJoinedCondition is true once a Windows machine's
	// node joined the cluster (its agent reported Joined, or the Machine
	// has a nodeRef). Linux machines, which kubeadm joins without
	// capwin's agent, do not have it.
	HybridMachineNodeJoinedCondition = "NodeJoined"
	// HybridMachineNodeJoinedReason means the node joined.
	HybridMachineNodeJoinedReason = "Joined"
	// HybridMachineNodeJoinedJoiningReason means the node reported a join
	// phase that runs (Unknown); the message names it.
	HybridMachineNodeJoinedJoiningReason = "Joining"
	// HybridMachineNodeJoinedWaitingForReportReason means no report came
	// from the node yet (Unknown): a node reports only over a control plane
	// that discovery proved.
	HybridMachineNodeJoinedWaitingForReportReason = "WaitingForReport"
	// HybridMachineNodeJoinedInvalidReportReason means the node's report
	// could not be read (Unknown); the message says why.
	HybridMachineNodeJoinedInvalidReportReason = "InvalidReport"
	// HybridMachineNodeJoinedFailedReasonSuffix ends the reason of a
	// failed join (False), which begins with the failed phase in
	// CamelCase: PreflightFailed, DiscoveryFailed, NodeRegistrationFailed.
	HybridMachineNodeJoinedFailedReasonSuffix = "Failed"
)
