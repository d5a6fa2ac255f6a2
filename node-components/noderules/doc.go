// Package noderules holds the rules on a node configuration's free-form
// entries that both sides apply: the labels, the kubelet's and kube-proxy's
// extra flags, and the registry mirrors. The node agent refuses a
// configuration that breaks them before it renders anything (render.Check
// is Check), and the renderers leave such entries out; the management side
// (bootstrap/payload, bootstrap/validation) refuses them before a node ever
// sees them. The rules are pure and the package imports nothing of the
// node's host seam, so capwin-manager links it without the agent.
package noderules
