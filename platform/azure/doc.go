// Package azure is capwin's Azure platform: a HybridMachine's network
// interface and VM through Azure Resource Manager (armnetwork, armcompute),
// one step per reconcile. A long-running operation is started, its poller's
// resume token recorded in the HybridMachine's status.operation, and polled
// once on each later reconcile, so a controller restart resumes the same
// create or delete. Throttling (429) and server errors come back as
// platform.ErrUnavailable with Azure's Retry-After.
//
// Every resource is named after the machine's computer name, which is also
// its node name (the Azure cloud provider finds a node's VM by that name),
// and tagged with the HybridMachine it belongs to: a resource with the name
// and another machine's tag is never touched.
package azure
