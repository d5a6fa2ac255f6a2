package noderules

import (
	"errors"
	"fmt"
	"sort"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

// Check reports what in a configuration the renderers cannot express
// faithfully: labels that are not valid Kubernetes labels, ExtraArgs that
// are not flag names or name a flag the agent sets, and registry mirrors
// that cannot become hosts files. The agent calls it before rendering
// (render.Check), the bootstrap provider before it hands a node its
// configuration; the renderers themselves leave such entries out rather
// than render them unsafely.
func Check(cfg *nodeconfig.Config) error {
	var errs []error
	keys := make([]string, 0, len(cfg.Labels))
	for k := range cfg.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p := LabelProblem(k, cfg.Labels[k]); p != "" {
			errs = append(errs, errors.New("labels: "+p))
		}
	}
	for i, a := range cfg.Kubelet.ExtraArgs {
		if p := ArgProblem(a.Name, kubeletReservedFlags); p != "" {
			errs = append(errs, fmt.Errorf("kubelet.extraArgs[%d]: %s", i, p))
		}
	}
	for i, a := range cfg.KubeProxy.ExtraArgs {
		if p := ArgProblem(a.Name, kubeProxyReservedFlags); p != "" {
			errs = append(errs, fmt.Errorf("kubeProxy.extraArgs[%d]: %s", i, p))
		}
	}
	if err := CheckRegistryMirrors(cfg.Containerd.RegistryMirrors); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
