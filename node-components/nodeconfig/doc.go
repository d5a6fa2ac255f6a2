// Package nodeconfig is the node configuration that bootstrap-capwin hands a
// Windows node on first boot, and its validation. It is a versioned wire
// format owned by the node agent: the renderer, the agent and the guest
// simulator all decode and check it with this package.
package nodeconfig
