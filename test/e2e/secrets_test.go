package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/internal/userdata"
	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/test/sim"
)

// TestNoSecretInAnyOutput runs a vSphere Windows cluster through joins
// that succeed, a join retried after a reboot and one refused for good
// (whose failure the node reports into its HybridMachine), a scale to
// zero and the Cluster's deletion, while it records everything capwin
// says (captureOutput), and then finds no secret in any of it: no
// bootstrap token or token secret, no vCenter password, no user data or
// part of the node configuration in it, no workload cluster credential.
// TestAzureWindowsCluster checks its own run the same way.
func TestNoSecretInAnyOutput(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	out := captureOutput(t, s)
	o := newCluster(t, 0)
	// Every node's first join finds the API server silent and is rebooted
	// to run again; the first node then pins another CA, is refused for
	// good and reports why.
	s.Guests.SetAPIServerUnreachable(func(string) int { return 1 })
	t.Cleanup(func() { s.Guests.SetAPIServerUnreachable(nil) })
	faultFirst(t, sim.WrongCAHash)
	scale(t, o, 3)
	g.Eventually(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(3))
		running := 0
		for _, m := range ms {
			if m.Status.Phase == string(clusterv1.MachinePhaseRunning) {
				running++
				continue
			}
			expectedRejections.Store(m.Spec.InfrastructureRef.Name, true)
			hm := hybridMachine(ctx, g, o, m.Spec.InfrastructureRef.Name)
			g.Expect(condition(hm, "NodeJoined")).To(HaveField("Reason", "DiscoveryFailed"))
		}
		g.Expect(running).To(Equal(2))
	}, wait, 200*time.Millisecond).Should(Succeed())
	scale(t, o, 0)
	g.Eventually(func(g Gomega) {
		g.Expect(windowsMachines(ctx, g, o)).To(BeEmpty())
	}, wait, 200*time.Millisecond).Should(Succeed())
	deleteCluster(t, o)
	noRejections(t)

	c := out.stop(t)
	c.expectCaptured(g, kindVCenterPassword)
	// (Never a matcher on the secrets: its failure would print them.)
	g.Expect(c.needles[sim.VCenterPassword].kind).To(Equal(kindVCenterPassword), "the vCenter password, read from the cluster's credentials Secret")
	g.Expect(c.count["ConfigMap "+discovery.ProgressNamespace]).To(BeNumerically(">", 0), "the node agents' progress reports")
	c.check(t)

	// The check finds what it looks for: a token secret that got into a
	// log line (in a value, as bytes) is reported, without its value.
	var token string
	for v, n := range c.needles {
		if n.kind == kindTokenSecret {
			token = v
			break
		}
	}
	planted := &capture{hay: map[string]string{}, needles: c.needles}
	planted.addLog(logLine{logger: "capwin", msg: "Planted", text: renderings([]byte("abc" + token + "def"))})
	found := planted.find()
	g.Expect(found).To(HaveLen(1))
	g.Expect(found[0]).To(ContainSubstring(kindTokenSecret))
	// Not a matcher on the token: a failure would print it.
	g.Expect(strings.Contains(found[0], token)).To(BeFalse(), "the report shows the planted secret")
}

// expectCaptured holds the capture to having recorded enough to mean
// something: capwin's controllers' lines at every verbosity they use, the
// guests' (their node agents'), Events and every kind of capwin's objects,
// and secrets of every kind the platform has read.
func (c *capture) expectCaptured(g Gomega, platformSecrets ...string) {
	g.Expect(c.lines("capwin")).To(BeNumerically(">", 200), "log lines of capwin's controllers")
	g.Expect(c.linesAt("capwin", 2)).To(BeNumerically(">", 0), "capwin's lines at verbosity 2")
	g.Expect(c.lines("guest")).To(BeNumerically(">", 20), "log lines of the guests and their node agents")
	g.Expect(c.count["Event management"]).To(BeNumerically(">", 0), "Events in the management cluster")
	for _, kind := range []string{"HybridCluster", "HybridMachine", "WindowsKubeadmConfig", "HybridMachineTemplate", "WindowsKubeadmConfigTemplate", "bootstrap data Secret"} {
		g.Expect(c.count[kind]).To(BeNumerically(">", 0), "versions of %s seen", kind)
	}
	for _, kind := range append([]string{kindToken, kindTokenSecret, kindUserData, kindNodeConfig, kindNodeConfigBase64, kindWorkloadCredential}, platformSecrets...) {
		g.Expect(c.needleCount(kind)).To(BeNumerically(">", 0), "secrets of kind %q read", kind)
	}
}

// The kinds of secret the check looks for.
const (
	kindToken              = "bootstrap token (ID.secret)"
	kindTokenSecret        = "bootstrap token secret"
	kindUserData           = "user data"
	kindUserDataBase64     = "user data, base64 (Azure customData)"
	kindUserDataGuestinfo  = "user data, gzip+base64 (vSphere guestinfo)"
	kindNodeConfig         = "node configuration JSON"
	kindNodeConfigBase64   = "node configuration, base64"
	kindNodeConfigPart     = "part of the base64 node configuration"
	kindVCenterPassword    = "vCenter password"
	kindAzureClientSecret  = "Azure client secret"
	kindWorkloadCredential = "workload cluster credential (kubeconfig Secret)"
)

// tokenPattern is a bootstrap token, ID and secret.
// (Kubernetes' pattern, anchored to the whole string, anchored here to words.)
var tokenPattern = regexp.MustCompile(`\b` + strings.TrimSuffix(strings.TrimPrefix(bootstrapapi.BootstrapTokenPattern, `\A`), `\z`) + `\b`)

// capture is what a test captured: the texts it searches (hay, each with
// where it was seen) and the secrets it searches for (needles), read
// from where they are kept while the test ran.
type capture struct {
	mu      sync.Mutex
	hay     map[string]string
	needles map[string]needle
	count   map[string]int
	logs    []logLine
	stopped bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// needle is a secret: its kind, and where it was read.
type needle struct{ kind, from string }

// captureOutput records, until stop, every log line of the simulation's
// loggers and every version of every object capwin writes or reports
// through: in the management cluster, capwin's objects (HybridCluster,
// HybridMachine, WindowsKubeadmConfig and their templates, whole but
// their managedFields), the bootstrap data Secrets' metadata and every
// Event; in the workload cluster, the node agents' progress ConfigMaps
// and every Event. It reads the secrets as they are made: the workload
// cluster's bootstrap tokens, the management cluster's bootstrap data
// Secrets (user data), credentials Secrets (password, clientSecret) and
// kubeconfig Secrets.
func captureOutput(t *testing.T, sm *sim.Sim) *capture {
	t.Helper()
	if err := logs.start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &capture{hay: map[string]string{}, needles: map[string]needle{}, count: map[string]int{}, cancel: cancel}
	t.Cleanup(func() {
		if !c.stopped {
			c.stop(t)
		}
	})
	mgmt, err := client.NewWithWatch(sm.Management.Config, client.Options{Scheme: sm.Management.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	workload, err := client.NewWithWatch(sm.Workload.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []client.ObjectList{&infrav1.HybridClusterList{}, &infrav1.HybridMachineList{}, &infrav1.HybridMachineTemplateList{},
		&infrav1.HybridClusterTemplateList{}, &bootstrapv1.WindowsKubeadmConfigList{}, &bootstrapv1.WindowsKubeadmConfigTemplateList{}} {
		c.watch(ctx, t, mgmt, l, func(obj client.Object) { c.addObject(sm.Management.Scheme, obj, "") })
	}
	c.watch(ctx, t, mgmt, &corev1.EventList{}, func(obj client.Object) { c.addObject(sm.Management.Scheme, obj, "management") })
	c.watch(ctx, t, mgmt, &corev1.SecretList{}, func(obj client.Object) { c.managementSecret(obj.(*corev1.Secret)) })
	c.watch(ctx, t, workload, &corev1.EventList{}, func(obj client.Object) { c.addObject(workload.Scheme(), obj, "workload") })
	c.watch(ctx, t, workload, &corev1.ConfigMapList{}, func(obj client.Object) { c.addObject(workload.Scheme(), obj, discovery.ProgressNamespace) },
		client.InNamespace(discovery.ProgressNamespace))
	c.watch(ctx, t, workload, &corev1.SecretList{}, func(obj client.Object) { c.workloadSecret(obj.(*corev1.Secret)) },
		client.InNamespace(metav1.NamespaceSystem))
	return c
}

// watch hands fn every version of the list's objects from now until ctx
// ends, from a watch that starts with the objects there are.
func (c *capture) watch(ctx context.Context, t *testing.T, cl client.WithWatch, list client.ObjectList, fn func(client.Object), opts ...client.ListOption) {
	t.Helper()
	w, err := cl.Watch(ctx, list, opts...)
	if err != nil {
		t.Fatalf("watching %T: %v", list, err)
	}
	c.wg.Go(func() {
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
					if obj, ok := ev.Object.(client.Object); ok {
						fn(obj)
					}
				}
			}
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			// The API server ended the watch: a new one starts with the
			// objects there are, so nothing still there is missed.
			if w, err = cl.Watch(ctx, list, opts...); err != nil {
				if ctx.Err() == nil {
					t.Errorf("watching %T again: %v", list, err)
				}
				return
			}
		}
	})
}

// stop ends the recording and the watches and takes the log lines.
func (c *capture) stop(t *testing.T) *capture {
	t.Helper()
	c.cancel()
	c.wg.Wait()
	c.stopped = true
	for _, l := range logs.stop() {
		c.addLog(l)
	}
	return c
}

func (c *capture) addLog(l logLine) {
	c.logs = append(c.logs, l)
	where := fmt.Sprintf("log line %q of logger %q", l.msg, l.logger)
	for _, s := range l.text {
		c.addHay(s, where)
	}
}

func (c *capture) addHay(s, where string) {
	if _, ok := c.hay[s]; !ok && s != "" {
		c.hay[s] = where
	}
}

// addObject adds every string of the object (its keys and values, but its
// managedFields) to the hay, counted by kind (and what).
func (c *capture) addObject(scheme *kruntime.Scheme, obj client.Object, what string) {
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetManagedFields(nil)
	kind := kindOf(scheme, obj)
	u, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count[strings.TrimSpace(kind+" "+what)]++
	where := fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
	if what != "" {
		where += " (" + what + ")"
	}
	for _, s := range stringLeaves(u) {
		c.addHay(s, where)
	}
}

func kindOf(scheme *kruntime.Scheme, obj client.Object) string {
	if gvks, _, err := scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0].Kind
	}
	return fmt.Sprintf("%T", obj)
}

// managementSecret reads the secrets in a management cluster Secret: a
// bootstrap data Secret's user data (whose metadata capwin writes: hay),
// a credentials Secret's password or client secret, a kubeconfig
// Secret's credentials.
func (c *capture) managementSecret(sec *corev1.Secret) {
	from := "Secret " + sec.Namespace + "/" + sec.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := sec.Data["password"]; ok {
		c.addNeedle(string(v), kindVCenterPassword, from)
	}
	if v, ok := sec.Data["clientSecret"]; ok {
		c.addNeedle(string(v), kindAzureClientSecret, from)
	}
	if sec.Type != clusterv1.ClusterSecretType {
		return
	}
	value := sec.Data["value"]
	switch {
	case len(value) == 0:
	case strings.HasSuffix(sec.Name, "-kubeconfig"):
		cfg, err := clientcmd.Load(value)
		if err != nil {
			return
		}
		for _, a := range cfg.AuthInfos {
			if len(a.ClientKeyData) > 0 {
				key := string(a.ClientKeyData)
				c.addNeedle(key, kindWorkloadCredential, from)
				c.addNeedle(base64.StdEncoding.EncodeToString(a.ClientKeyData), kindWorkloadCredential, from)
				if lines := strings.Split(key, "\n"); len(lines) > 2 {
					c.addNeedle(lines[1], kindWorkloadCredential, from)
				}
			}
			c.addNeedle(a.Token, kindWorkloadCredential, from)
			c.addNeedle(a.Password, kindWorkloadCredential, from)
		}
	case len(sec.Data["format"]) > 0:
		// Bootstrap data: capwin writes its metadata.
		u, _ := kruntime.DefaultUnstructuredConverter.ToUnstructured(&sec.ObjectMeta)
		for _, s := range stringLeaves(u) {
			c.addHay(s, from+" metadata")
		}
		c.count["bootstrap data Secret"]++
		c.userData(value, from)
	}
}

// userData reads a machine's user data: the whole of it, as each platform
// carries it, and on Windows the node configuration the stub carries,
// whole, base64 and in parts, with the bootstrap token in it.
func (c *capture) userData(value []byte, from string) {
	c.addNeedle(string(value), kindUserData, from)
	c.addNeedle(base64.StdEncoding.EncodeToString(value), kindUserDataBase64, from)
	if gz, err := userdata.GzipBase64(value); err == nil {
		c.addNeedle(gz, kindUserDataGuestinfo, from)
	}
	texts := []string{string(value)}
	if cfg := nodeConfigBase64(string(value)); cfg != "" {
		c.addNeedle(cfg, kindNodeConfigBase64, from)
		for _, at := range []int{0, len(cfg)/2 - 20, len(cfg) - 40} {
			if at >= 0 && at+40 <= len(cfg) {
				c.addNeedle(cfg[at:at+40], kindNodeConfigPart, from)
			}
		}
		if raw, err := base64.StdEncoding.DecodeString(cfg); err == nil {
			c.addNeedle(string(raw), kindNodeConfig, from)
			texts = append(texts, string(raw))
		}
	}
	for _, text := range texts {
		for _, m := range tokenPattern.FindAllStringSubmatch(text, -1) {
			c.addNeedle(m[0], kindToken, from+" (user data)")
			c.addNeedle(m[2], kindTokenSecret, from+" (user data)")
		}
	}
}

// nodeConfigBase64 is the base64 node configuration in capwin's bootstrap
// stub (payload.ParseScript reads it out), or "" for other user data.
func nodeConfigBase64(value string) string {
	raw, err := payload.ParseScript([]byte(value))
	if err != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// workloadSecret reads a bootstrap token of the workload cluster: its ID
// is public, its secret is not.
func (c *capture) workloadSecret(sec *corev1.Secret) {
	if sec.Type != bootstrapapi.SecretTypeBootstrapToken {
		return
	}
	id, secret := string(sec.Data[bootstrapapi.BootstrapTokenIDKey]), string(sec.Data[bootstrapapi.BootstrapTokenSecretKey])
	if id == "" || secret == "" {
		return
	}
	from := "Secret kube-system/" + sec.Name + " of the workload cluster"
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addNeedle(id+"."+secret, kindToken, from)
	c.addNeedle(secret, kindTokenSecret, from)
}

func (c *capture) addNeedle(value, kind, from string) {
	if value == "" {
		return
	}
	if _, ok := c.needles[value]; !ok {
		c.needles[value] = needle{kind: kind, from: from}
	}
}

// lines is how many lines loggers named prefix (and their children)
// wrote; linesAt counts those at the verbosity.
func (c *capture) lines(prefix string) int { return c.linesAt(prefix, -1) }

func (c *capture) linesAt(prefix string, level int) int {
	n := 0
	for _, l := range c.logs {
		if (l.logger == prefix || strings.HasPrefix(l.logger, prefix+"/")) && (level < 0 || l.level == level) {
			n++
		}
	}
	return n
}

func (c *capture) needleCount(kind string) int {
	n := 0
	for _, k := range c.needles {
		if k.kind == kind {
			n++
		}
	}
	return n
}

// check fails the test for every secret found in the hay; it says where,
// and of what kind and from where the secret is, never its value. It
// logs what it searched.
func (c *capture) check(t *testing.T) {
	t.Helper()
	for _, f := range c.find() {
		t.Error(f)
	}
	loggers := map[string]int{}
	for _, l := range c.logs {
		loggers[strings.SplitN(l.logger, "/", 2)[0]]++
	}
	kinds := map[string]int{}
	short := 0
	for v, n := range c.needles {
		kinds[n.kind]++
		if len(v) < 8 {
			short++
		}
	}
	if short > 0 {
		t.Errorf("%d secrets are shorter than 8 characters: finding them would prove nothing", short)
	}
	t.Logf("searched %d texts: %d log lines by logger %v; object versions by kind %v", len(c.hay), len(c.logs), sorted(loggers), sorted(c.count))
	t.Logf("for %d secrets by kind %v", len(c.needles), sorted(kinds))
}

// find returns a message for each text that holds a secret.
func (c *capture) find() []string {
	var out []string
	for hay, where := range c.hay {
		for value, n := range c.needles {
			if strings.Contains(hay, value) {
				out = append(out, fmt.Sprintf("a %s (from %s) appears in %s: %s", n.kind, n.from, where, c.redact(hay)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// redact is the text without any secret, cut short.
func (c *capture) redact(s string) string {
	values := slices.Collect(maps.Keys(c.needles))
	// The longest first: a token before its secret.
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	for _, v := range values {
		s = strings.ReplaceAll(s, v, "<"+c.needles[v].kind+">")
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func sorted(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, m[k])
	}
	return "{" + b.String() + "}"
}
