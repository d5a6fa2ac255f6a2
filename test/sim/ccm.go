package sim

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/platform/vsphere/vspheresim/cpi"
)

// The vSphere cloud controller manager's DaemonSet, as the flavors install
// it.
const (
	cpiNamespace = "kube-system"
	cpiDaemonSet = "vsphere-cloud-controller-manager"
)

// cloudControllerManager plays the pod of the workload cluster's vSphere
// cloud controller manager DaemonSet. envtest runs no scheduler and no
// kubelet, so this does what they would: once the DaemonSet exists and a
// Node it may run on (its node selector matches, it tolerates the Node's
// NoSchedule and NoExecute taints) exists, it reads the configuration from
// the ConfigMap the DaemonSet mounts at --cloud-config and the credentials
// from the Secret that names, and runs the simulated CPI (package cpi)
// with them. A DaemonSet, configuration or Secret the real pod could not
// start with keeps it from starting, and Err says why.
type cloudControllerManager struct {
	addonPod
	workload client.Client
	config   *rest.Config
}

func (m *cloudControllerManager) run(ctx context.Context) { m.addonPod.run(ctx, m.start) }

// addonPod plays an add-on's pod: it tries to start it every second until
// it starts, keeps why it cannot (Err, logged when it changes), and stops
// it when ctx ends.
type addonPod struct {
	name string
	log  logr.Logger

	mu  sync.Mutex
	err error
}

// Err is why the pod is not running, nil once it runs (or before what it
// starts from exists).
func (a *addonPod) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// run calls start until it returns a stop function (nil, nil: not yet).
func (a *addonPod) run(ctx context.Context, start func(context.Context) (func(), error)) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		stop, err := start(ctx)
		a.mu.Lock()
		if err != nil && (a.err == nil || a.err.Error() != err.Error()) {
			a.log.Info(a.name+" cannot start", "reason", err.Error())
		}
		a.err = err
		a.mu.Unlock()
		if stop != nil {
			a.log.Info(a.name + " runs")
			<-ctx.Done()
			stop()
		}
		select {
		case <-ctx.Done():
			a.mu.Lock()
			a.err = nil
			a.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

// start starts the CPI when its pod would run; nil, nil while the
// DaemonSet or a Node for it is missing.
func (m *cloudControllerManager) start(ctx context.Context) (func(), error) {
	ds := &appsv1.DaemonSet{}
	if err := m.workload.Get(ctx, client.ObjectKey{Namespace: cpiNamespace, Name: cpiDaemonSet}, ds); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	nodes := &corev1.NodeList{}
	if err := m.workload.List(ctx, nodes); err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return schedulable(&ds.Spec.Template.Spec, &n) }) {
		return nil, nil
	}
	conf, err := m.cloudConfig(ctx, ds)
	if err != nil {
		return nil, err
	}
	vc, err := cpi.ParseConfig(conf)
	if err != nil {
		return nil, err
	}
	// The pod talks to the API server as its ServiceAccount: the flavor's
	// RBAC decides what it may do.
	cfg, err := podServiceAccount(ctx, m.workload, m.config, ds)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: vc.SecretNamespace, Name: vc.SecretName}, secret); err != nil {
		return nil, fmt.Errorf("the CPI's credentials: %w", err)
	}
	cloud, err := cpi.New(vc, secret.Data)
	if err != nil {
		return nil, err
	}
	return cpi.Run(ctx, cfg, cloud)
}

// podServiceAccount is the API server configuration of the DaemonSet's pod:
// its ServiceAccount's identity, which must exist.
func podServiceAccount(ctx context.Context, workload client.Client, config *rest.Config, ds *appsv1.DaemonSet) (*rest.Config, error) {
	name := ds.Spec.Template.Spec.ServiceAccountName
	if name == "" {
		name = "default"
	}
	if err := workload.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: name}, &corev1.ServiceAccount{}); err != nil {
		return nil, fmt.Errorf("DaemonSet %s: its ServiceAccount: %w", ds.Name, err)
	}
	cfg := rest.CopyConfig(config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ds.Namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ds.Namespace, "system:authenticated"},
	}
	return cfg, nil
}

// cloudConfig reads the file --cloud-config names from the ConfigMap
// volume mounted over its directory.
func (m *cloudControllerManager) cloudConfig(ctx context.Context, ds *appsv1.DaemonSet) ([]byte, error) {
	spec := &ds.Spec.Template.Spec
	if spec.Affinity != nil {
		return nil, fmt.Errorf("DaemonSet %s: the simulation places the CPI by node selector and tolerations only, not affinity", ds.Name)
	}
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("DaemonSet %s: %d containers, the CPI's has one", ds.Name, len(spec.Containers))
	}
	ctr := spec.Containers[0]
	args := append(slices.Clone(ctr.Command), ctr.Args...)
	if !slices.Contains(args, "--cloud-provider=vsphere") {
		return nil, fmt.Errorf("DaemonSet %s: the CPI runs with --cloud-provider=vsphere", ds.Name)
	}
	file := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--cloud-config="); ok {
			file = v
		}
	}
	if file == "" {
		return nil, fmt.Errorf("DaemonSet %s: no --cloud-config", ds.Name)
	}
	dir, key := path.Split(file)
	for _, vm := range ctr.VolumeMounts {
		if path.Clean(vm.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			cm := &corev1.ConfigMap{}
			if err := m.workload.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: v.ConfigMap.Name}, cm); err != nil {
				return nil, fmt.Errorf("the CPI's configuration: %w", err)
			}
			data, ok := cm.Data[key]
			if !ok {
				return nil, fmt.Errorf("ConfigMap %s has no %s", cm.Name, key)
			}
			return []byte(data), nil
		}
	}
	return nil, fmt.Errorf("DaemonSet %s: no ConfigMap volume is mounted at %s", ds.Name, dir)
}

// schedulable is whether a pod of spec may run on the node: its node
// selector matches and it tolerates the node's NoSchedule and NoExecute
// taints (the checks that decide where the CPI's DaemonSet runs; it sets
// no affinity).
func schedulable(spec *corev1.PodSpec, n *corev1.Node) bool {
	if !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(logr.Discard(), t, false) }) {
			return false
		}
	}
	return true
}
