// Package report is the wire format of a Windows node's join progress
// report: what the node agent (node-components/agent) writes after every
// phase change, on the node (status.json) and off it, and what the
// management side (the HybridMachine reconciler) reads into
// HybridMachine.status.nodeBootstrap. It also holds where that report lives
// in the workload cluster: the ConfigMap's namespace and key, and the group
// a node's bootstrap token carries to write it.
//
// Both sides import this package and nothing else of each other for the
// report, so it imports only the standard library: capwin-manager links it
// without the agent, its host seam or its bundle code. Its JSON field names
// and values are a contract between an agent and a manager of different
// versions: add fields, never rename or reuse them.
package report
