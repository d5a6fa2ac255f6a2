package setup

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestCachedSecretsKeepOnlyKubeconfigData(t *testing.T) {
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
				Labels:        map[string]string{clusterv1.ClusterNameLabel: "w1"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "capi-manager"}}},
			Data: map[string][]byte{"value": []byte("data")},
		}
	}
	for _, tt := range []struct {
		name     string
		keepData bool
	}{
		{"w1-kubeconfig", true},
		{"w1-windows-abcde", false},
		{"w1-ca", false},
		// Read by the Cluster's name, whatever its label says, as Cluster
		// API's own manager keeps it.
		{"w2-kubeconfig", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out any
			var err error
			for o, by := range CacheOptions(0).ByObject {
				if _, ok := o.(*corev1.Secret); ok {
					out, err = by.Transform(secret(tt.name))
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			s, ok := out.(*corev1.Secret)
			if !ok {
				t.Fatalf("the transform returned %T", out)
			}
			if s.ManagedFields != nil {
				t.Error("managed fields kept")
			}
			if got := s.Data != nil; got != tt.keepData {
				t.Errorf("data kept: %v, want %v", got, tt.keepData)
			}
			if s.Name != tt.name || s.Labels[clusterv1.ClusterNameLabel] != "w1" {
				t.Errorf("name or labels changed: %s %v", s.Name, s.Labels)
			}
		})
	}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "capi-manager"}}}}
	out, err := CacheOptions(0).DefaultTransform(m)
	if err != nil || out.(*clusterv1.Machine).ManagedFields != nil {
		t.Errorf("other objects keep their managed fields: %v", err)
	}
	if disabled := ClientOptions().Cache.DisableFor; !slices.ContainsFunc(disabled, func(o client.Object) bool { _, ok := o.(*corev1.Secret); return ok }) {
		t.Error("the manager's client reads Secrets from the cache, whose Secrets have no data")
	}
}
