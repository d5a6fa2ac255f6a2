package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestWrittenStale(t *testing.T) {
	obj := func(uid, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: types.UID(uid), ResourceVersion: rv}}
	}
	var w written
	if w.stale(obj("u1", "5")) {
		t.Fatal("nothing written: not stale")
	}
	w.record(obj("u1", "10"))
	if !w.stale(obj("u1", "9")) {
		t.Fatal("version 9 read after 10 was written: stale")
	}
	if !w.stale(obj("u1", "9")) {
		t.Fatal("still stale until the cache catches up")
	}
	if w.stale(obj("u1", "10")) {
		t.Fatal("the written version: not stale")
	}
	if w.stale(obj("u1", "9")) {
		t.Fatal("once caught up the record is dropped")
	}

	w.record(obj("u1", "20"))
	if w.stale(obj("u2", "3")) {
		t.Fatal("a new object of the same name is not judged by the old one's version")
	}
	w.record(obj("u1", "20"))
	if w.stale(obj("u1", "not-a-number")) {
		t.Fatal("versions that do not compare are not stale")
	}
	w.record(obj("u1", "20"))
	w.forget(types.NamespacedName{Namespace: "ns", Name: "a"})
	if w.stale(obj("u1", "1")) {
		t.Fatal("forgotten: not stale")
	}
}
