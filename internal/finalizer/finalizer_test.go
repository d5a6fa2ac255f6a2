package finalizer

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRemoveLetsGoOfEitherName(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []string
		want []string
	}{
		{"current", []string{"example.com/a", "x.io/new"}, []string{"example.com/a"}},
		{"legacy", []string{"old.x.io", "example.com/a"}, []string{"example.com/a"}},
		{"both", []string{"old.x.io", "x.io/new"}, []string{}},
		{"neither", []string{"example.com/a"}, []string{"example.com/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Finalizers: tc.have}}
			Remove(s, "x.io/new", "old.x.io")
			NewWithT(t).Expect(s.Finalizers).To(Equal(tc.want))
		})
	}
}

// TestEnsureLeavesDeletedObjects: the API server refuses a new finalizer on
// an object being deleted, so none is asked for (the nil client would
// panic if it were).
func TestEnsureLeavesDeletedObjects(t *testing.T) {
	now := metav1.Now()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{"old.x.io"}}}
	g := NewWithT(t)
	patched, err := Ensure(context.Background(), nil, s, "x.io/new", "old.x.io")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(patched).To(BeFalse())
	g.Expect(s.Finalizers).To(Equal([]string{"old.x.io"}))
}
