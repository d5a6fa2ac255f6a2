package deleted

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
)

func TestIgnoreGone(t *testing.T) {
	notFound := fmt.Errorf("failed to patch: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "s"))
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "s", errors.New("changed"))
	now := metav1.Now()
	deleting := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}
	held := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{"f"}}}
	live := &corev1.Secret{}
	for _, c := range []struct {
		name    string
		obj     *corev1.Secret
		err     error
		ignored bool
	}{
		{"deleted, not found", deleting, notFound, true},
		{"deleted, aggregate of not found", deleting, kerrors.NewAggregate([]error{notFound, notFound}), true},
		{"deleted, not found and a conflict", deleting, kerrors.NewAggregate([]error{notFound, conflict}), false},
		{"deleted, conflict", deleting, conflict, false},
		{"a finalizer left", held, notFound, false},
		{"not being deleted", live, notFound, false},
	} {
		got := IgnoreGone(c.obj, c.err)
		if (got == nil) != c.ignored {
			t.Errorf("%s: IgnoreGone returned %v", c.name, got)
		}
	}
	if IgnoreGone(deleting, nil) != nil {
		t.Error("nil is not nil")
	}
}
