package render

import (
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/noderules"
)

// The rules on a configuration's labels, extra flags and registry mirrors
// are node-components/noderules', which the management side applies too
// without linking render (which imports the host seam). The renderers
// leave out what they refuse.

// The flags the agent sets and depends on, which Check refuses and the
// renderers drop from ExtraArgs.
var (
	kubeletReservedFlags   = noderules.KubeletReservedFlags()
	kubeProxyReservedFlags = noderules.KubeProxyReservedFlags()
)

// argProblem says why an ExtraArgs entry cannot be rendered, or "".
func argProblem(a nodeconfig.Arg, reserved map[string]bool) string {
	return noderules.ArgProblem(a.Name, reserved)
}

// labelProblem says why a label cannot be rendered, or "".
func labelProblem(k, v string) string { return noderules.LabelProblem(k, v) }

// Check is noderules.Check: it reports what in a configuration the
// renderers cannot express faithfully. The agent calls it before
// rendering.
func Check(cfg *nodeconfig.Config) error { return noderules.Check(cfg) }
