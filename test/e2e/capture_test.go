package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// logs records every line of the simulations' loggers (capwin's
// controllers, Cluster API's, the guests with their node agents, the
// simulated controller managers) while a test records them
// (captureOutput); otherwise it discards them, as logr.Discard does.
var logs = &logRecorder{}

// logRecorder is a logr sink's store: while armed, every line at every
// verbosity up to maxVerbosity, with its logger's names, its message, its error and all its
// key/values (the logger's own and the line's), each value rendered as
// text in every form an output could take.
type logRecorder struct {
	armed atomic.Bool
	mu    sync.Mutex
	lines []logLine
}

// logLine is one recorded line.
type logLine struct {
	// logger is the logger's names joined by "/": "capwin" is capwin's
	// controllers, "capi" Cluster API's (and capwin's webhooks, which run
	// in its manager), "guest" the guests and their node agents.
	logger string
	level  int
	msg    string
	// text is the message, the error and every key and value as text.
	text []string
}

func (r *logRecorder) sink() logr.LogSink { return &recordingSink{r: r} }

// start arms the recorder, emptied; it fails when a test already records.
func (r *logRecorder) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.armed.CompareAndSwap(false, true) {
		return fmt.Errorf("another test records the logs")
	}
	r.lines = nil
	return nil
}

// stop disarms the recorder and returns what it recorded.
func (r *logRecorder) stop() []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed.Store(false)
	lines := r.lines
	r.lines = nil
	return lines
}

func (r *logRecorder) add(s *recordingSink, level int, msg string, err error, kvs []any) {
	if !r.armed.Load() {
		return
	}
	l := logLine{logger: strings.Join(s.names, "/"), level: level, msg: msg, text: []string{msg}}
	if err != nil {
		l.text = append(l.text, renderings(err)...)
	}
	for _, kv := range [][]any{s.values, kvs} {
		for _, v := range kv {
			l.text = append(l.text, renderings(v)...)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.armed.Load() {
		r.lines = append(r.lines, l)
	}
}

// renderings are the forms a logged value takes in some output: as
// fmt prints it, as a Stringer or error says it, its bytes as text and
// base64, and every string in its JSON encoding (how a JSON logger writes
// it: []byte as base64, structs by their fields).
func renderings(v any) (out []string) {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return []string{v}
	case []byte:
		out = append(out, string(v), base64.StdEncoding.EncodeToString(v))
	case error:
		out = append(out, v.Error())
	case fmt.Stringer:
		func() {
			defer func() { _ = recover() }()
			out = append(out, v.String())
		}()
	}
	out = append(out, fmt.Sprintf("%+v", v))
	func() {
		defer func() { _ = recover() }()
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		var decoded any
		if json.Unmarshal(data, &decoded) == nil {
			out = append(out, stringLeaves(decoded)...)
		}
	}()
	return out
}

// stringLeaves are the map keys and string values in a decoded JSON or
// unstructured value.
func stringLeaves(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case map[string]any:
			for k, e := range v {
				out = append(out, k)
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// recordingSink is a logger of the recorder's: its names and values.
type recordingSink struct {
	r      *logRecorder
	names  []string
	values []any
}

func (s *recordingSink) Init(logr.RuntimeInfo) {}

// maxVerbosity is the most verbose level recorded: above capwin's own
// (4), controller-runtime's and Cluster API's libraries' (up to 6) in
// capwin-manager. From 8 on, client-go dumps the bodies of its requests
// and responses, Secrets included, as every Kubernetes client does.
const maxVerbosity = 7

// Enabled is every verbosity up to maxVerbosity while a test records.
func (s *recordingSink) Enabled(level int) bool { return level <= maxVerbosity && s.r.armed.Load() }

func (s *recordingSink) Info(level int, msg string, kvs ...any) { s.r.add(s, level, msg, nil, kvs) }

func (s *recordingSink) Error(err error, msg string, kvs ...any) { s.r.add(s, 0, msg, err, kvs) }

func (s *recordingSink) WithValues(kvs ...any) logr.LogSink {
	return &recordingSink{r: s.r, names: s.names, values: append(slices.Clip(s.values), kvs...)}
}

func (s *recordingSink) WithName(name string) logr.LogSink {
	return &recordingSink{r: s.r, names: append(slices.Clip(s.names), name), values: s.values}
}

// teeSink writes each line to both sinks, each at the verbosities it
// enables: the recorder and E2E_LOG's printer.
type teeSink struct{ a, b logr.LogSink }

func (t teeSink) Init(info logr.RuntimeInfo) { t.a.Init(info); t.b.Init(info) }

func (t teeSink) Enabled(level int) bool { return t.a.Enabled(level) || t.b.Enabled(level) }

func (t teeSink) Info(level int, msg string, kvs ...any) {
	if t.a.Enabled(level) {
		t.a.Info(level, msg, kvs...)
	}
	if t.b.Enabled(level) {
		t.b.Info(level, msg, kvs...)
	}
}

func (t teeSink) Error(err error, msg string, kvs ...any) {
	t.a.Error(err, msg, kvs...)
	t.b.Error(err, msg, kvs...)
}

func (t teeSink) WithValues(kvs ...any) logr.LogSink {
	return teeSink{t.a.WithValues(kvs...), t.b.WithValues(kvs...)}
}

func (t teeSink) WithName(name string) logr.LogSink {
	return teeSink{t.a.WithName(name), t.b.WithName(name)}
}
