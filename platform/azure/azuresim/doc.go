// Package azuresim is an in-memory model of the Azure Resource Manager
// resources capwin uses (resource groups, virtual networks and subnets,
// network security groups, route tables, public IP addresses, load
// balancers, network interfaces, virtual machines and their managed OS
// disks), served to the real Azure SDK for Go
// clients through the SDK's own fake servers.
//
// A test builds a Cloud with New, gives Cloud.ClientOptions and Credential to
// armcompute, armnetwork and armresources clients, and then inspects the
// model with Cloud.VirtualMachines, Cloud.Interfaces, Cloud.Disks,
// Cloud.VirtualNetworks, Cloud.LoadBalancers and
// Cloud.ResourceGroups. Cloud.SetFault injects throttling and server errors,
// Options.WritesPerSecond throttles writes the way ARM does, and
// Cloud.OnVMCreated lets a guest simulator boot a VM once its create ends.
//
// The simulation checks the rules Azure applies to the requests capwin sends
// (names, passwords, address ranges, references, resources in use) and
// answers with the status and error code Azure uses. Where it differs from
// Azure it is stricter in these ways:
//
//   - A long-running operation ends only when a client polls it: Azure ends
//     it whether or not anyone polls. Until the last poll the resource shows
//     provisioningState "Creating", "Updating" or "Deleting", a deleted
//     resource stays visible, and Cloud.OnVMCreated is not called.
//   - A request the simulation does not model (an API without a fake, a
//     change to a VM's network interfaces, a PATCH of anything but tags and
//     userData) is rejected rather than accepted.
//   - A load balancer whose backend pool holds a network interface cannot
//     be deleted (code InUseBackendAddressPoolCannotBeDeleted, the
//     simulation's own): capwin deletes it only after its machines.
//   - Polling an operation that this Cloud does not know (for example a
//     resume token from another Cloud) answers 404. So does polling one
//     that has ended, which ARM answers with its end again for a while:
//     a client that polls an ended operation twice sees a 404 here.
//
// And it is more forgiving in these, which tests must make up for:
//
//   - Validation happens when the operation starts, and no simulated
//     operation fails later: Azure can fail a VM create after accepting it
//     (an allocation failure, OSProvisioningTimedOut when the guest never
//     reports ready). Inject such failures with Cloud.SetFault on the poll,
//     or leave a made VM Failed with Cloud.FailVM.
//   - The SDK's fake servers keep one operation per resource path: a second
//     write to a resource while one runs is taken for a poll of the first,
//     and is neither validated nor refused as Azure might (409).
//   - A list of VMs with $expand=instanceView returns every VM's instance
//     view and is never refused. Azure's API reference says that
//     expansion needs a $filter; a client must not count on it (capwin
//     reads a VM on its own when the list is refused or a listed VM has
//     no instance view).
//   - While a VM starts or stops it keeps its old power state, where
//     Azure shows PowerState/starting, stopping or deallocating.
//   - The fake pollers make no final GET of a resource after its create,
//     which ARM's pollers make: a real create costs a request more.
//   - Writes share one token bucket (Options.WritesPerSecond); ARM keeps
//     separate buckets for writes and deletes, and the compute resource
//     provider has limits of its own per API.
//
// Like Azure, GET never returns a VM's osProfile.adminPassword or
// osProfile.customData; the inspection methods (Cloud.VirtualMachines) and
// Cloud.OnVMCreated do, because the guest simulator needs the custom data.
package azuresim
