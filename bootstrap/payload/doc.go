// Package payload renders the bootstrap data of a Windows node: a constant
// PowerShell stub that cloudbase-init runs, carrying the node configuration
// (node-components/nodeconfig) as base64 JSON, so that no per-node value is
// ever part of the script's code.
package payload
