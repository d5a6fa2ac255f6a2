// Package exitcode holds capwin-node's exit codes. They are a contract with
// the bootstrap stub (bootstrap/payload), which decides from join's code
// whether cloudbase-init runs the bootstrap again; docs/node-agent.md lists
// them for people.
package exitcode

const (
	// OK is success; for join, the node joined (or had joined already).
	OK = 0
	// Failed is a failure that running the command again will not fix:
	// the configuration, the image or the cluster must change first.
	Failed = 1
	// Usage is a command line that does not parse.
	Usage = 2
	// Retry is a failure of join that may pass by itself: the API server
	// did not answer, the token is not signed yet, a service did not
	// start, the kubelet or the pod network did not come up in time,
	// another capwin-node command held the node. Running join again
	// continues from the phase that failed.
	Retry = 3
)
