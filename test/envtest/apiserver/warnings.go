package apiserver

import (
	"context"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Warnings records the warnings the API server sends with its answers to a
// client (the Warning headers client-go otherwise logs).
type Warnings struct {
	mu    sync.Mutex
	texts []string
}

var _ rest.WarningHandlerWithContext = &Warnings{}

// HandleWarningHeaderWithContext records one warning.
func (w *Warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

// About returns the warnings recorded so far that contain s.
func (w *Warnings) About(s string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var found []string
	for _, t := range w.texts {
		if strings.Contains(t, s) {
			found = append(found, t)
		}
	}
	return found
}

// NewClient makes a client as controller-runtime does, whose warnings w
// records. As manager.Options.NewClient it gives a manager's reconcilers
// such a client.
func (w *Warnings) NewClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = nil
	cfg.WarningHandlerWithContext = w
	return client.New(cfg, opts)
}
