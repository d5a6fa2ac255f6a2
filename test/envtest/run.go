package envtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Run is a TestMain body: it starts an Environment with opts and stores it in
// *env; if setup is given, it makes a manager, lets setup register
// reconcilers or webhooks on it and starts it. It then runs the tests and
// stops the manager before the API server. It returns the exit code. The
// controllers' logs go to stderr when TEST_LOG is set, and nowhere otherwise.
func Run(m *testing.M, env **Environment, opts Options, setup func(ctrl.Manager) error) int {
	ctrl.SetLogger(testLogger())
	ctx := context.Background()
	e, err := Start(ctx, opts)
	if err != nil {
		// A missing control plane is a failure, never a skip.
		println("starting envtest:", err.Error())
		return 1
	}
	*env = e
	defer func() {
		if err := e.Stop(); err != nil {
			println("stopping envtest:", err.Error())
		}
	}()
	if setup != nil {
		mgr, err := e.NewManager()
		if err == nil {
			err = setup(mgr)
		}
		if err != nil {
			println("setting up the manager:", err.Error())
			return 1
		}
		stop, err := e.StartManager(ctx, mgr)
		defer func() {
			if err := stop(); err != nil {
				println("the manager stopped with:", err.Error())
			}
		}()
		if err != nil {
			println("starting the manager:", err.Error())
			return 1
		}
	}
	return m.Run()
}

// testLogger writes to stderr when TEST_LOG is set and discards otherwise.
func testLogger() logr.Logger {
	if os.Getenv("TEST_LOG") == "" {
		return logr.Discard()
	}
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, prefix, args)
	}, funcr.Options{LogTimestamp: true, Verbosity: 4})
}

// DecodeObjects splits a multi-document YAML (or JSON) stream into objects,
// skipping empty documents.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
}
