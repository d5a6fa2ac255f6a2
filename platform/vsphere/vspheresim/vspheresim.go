// Package vspheresim runs govmomi's vCenter simulator (vcsim) for capwin's
// tests and simulation, and looks at it and tampers with it the way those
// need: which VMs exist, which tasks ran, which sessions are open, injected
// faults, slow tasks, calls left unanswered.
//
// It does not import platform/vsphere, so that package's own tests can use
// it. Outside platform/vsphere, it is the only way capwin's code reaches
// govmomi.
package vspheresim

import (
	"context"
	"crypto/sha1" //nolint:gosec // vCenter thumbprints are SHA-1 or SHA-256; this is the SHA-1 one.
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The one account that logs in to the simulated vCenter.
const (
	User     = "capwin@vsphere.local"
	Password = "correct horse"
)

// VCenter is a vcsim vCenter listening on a local TLS port: one datacenter
// DC0 with a cluster DC0_C0, hosts, and VMs that can be cloned
// (DC0_H0_VM0, DC0_H0_VM1, ...) in /DC0/vm.
type VCenter struct {
	// Model is vcsim's model; its Service takes fault rules
	// (Model.Service.AddFaultRule, or FailCalls).
	Model *simulator.Model
	// Host is host:port.
	Host string
	// Thumbprint is the SHA-1 thumbprint of its certificate, as vCenter
	// shows it.
	Thumbprint string

	server *simulator.Server
	// gate is Host: a relay to the server, which SetReachable takes down
	// and brings back.
	gate *gate
}

// Start starts a vCenter simulator; Stop stops it.
func Start() (*VCenter, error) {
	model := simulator.VPX()
	if err := model.Create(); err != nil {
		return nil, fmt.Errorf("creating the vCenter model: %w", err)
	}
	model.Service.TLS = new(tls.Config) // serve HTTPS, as vCenter does
	// Only this user and password log in.
	model.Service.Listen = &url.URL{User: url.UserPassword(User, Password)}
	srv := model.Service.NewServer()
	// govmomi checks a thumbprint after a verified handshake fails, so each
	// new connection that trusts by thumbprint logs a handshake error here:
	// into the void, not onto the terminal.
	srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	cert := srv.Certificate()
	if cert == nil {
		srv.Close()
		model.Remove()
		return nil, errors.New("the vCenter simulator serves no certificate")
	}
	sum := sha1.Sum(cert.Raw) //nolint:gosec // see the import
	hex := make([]string, len(sum))
	for i, b := range sum {
		hex[i] = fmt.Sprintf("%02X", b)
	}
	g, err := newGate(srv.URL.Host)
	if err != nil {
		srv.Close()
		model.Remove()
		return nil, fmt.Errorf("listening for the vCenter simulator: %w", err)
	}
	return &VCenter{Model: model, Host: g.addr, Thumbprint: strings.Join(hex, ":"), server: srv, gate: g}, nil
}

// StartT starts a vCenter simulator that stops when the test ends.
func StartT(t testing.TB) *VCenter {
	t.Helper()
	v, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	return v
}

// Stop stops the simulator and removes its model, once the tasks it runs
// have ended (30 s at most): a vcsim task reads the model's files as it
// runs, and a clone whose VM's files are removed under it panics in vcsim,
// ending the test binary.
func (v *VCenter) Stop() {
	v.waitForTasks(30 * time.Second)
	v.gate.close()
	v.server.Close()
	v.Model.Remove()
}

// waitForTasks waits, at most limit, until none of the TaskManager's recent
// tasks (vCenter's 200 latest) is queued or running. It asks the server
// itself, not through the gate SetReachable may have closed, with the
// faults FailCalls injected cleared (the model goes next anyway), and asks
// again on an error until limit.
func (v *VCenter) waitForTasks(limit time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	v.Model.Service.ClearFaultRules()
	u := v.URL()
	u.Host = v.server.URL.Host
	var c *govmomi.Client
	for c == nil {
		var err error
		if c, err = govmomi.NewClient(ctx, u, true); err != nil {
			if ctx.Err() != nil {
				return
			}
			c = nil
			time.Sleep(50 * time.Millisecond)
		}
	}
	defer func() { _ = c.Logout(context.WithoutCancel(ctx)) }()
	for ctx.Err() == nil {
		if done, err := tasksEnded(ctx, c); err == nil && done {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tasksEnded is whether none of the TaskManager's recent tasks is queued or
// running.
func tasksEnded(ctx context.Context, c *govmomi.Client) (bool, error) {
	var tm mo.TaskManager
	if err := c.RetrieveOne(ctx, *c.ServiceContent.TaskManager, []string{"recentTask"}, &tm); err != nil {
		return false, err
	}
	var tasks []mo.Task
	if len(tm.RecentTask) > 0 {
		if err := c.Retrieve(ctx, tm.RecentTask, []string{"info.state"}, &tasks); err != nil {
			return false, err
		}
	}
	return !slices.ContainsFunc(tasks, func(t mo.Task) bool {
		return t.Info.State == types.TaskInfoStateQueued || t.Info.State == types.TaskInfoStateRunning
	}), nil
}

// URL is the vCenter's SDK URL with its credentials.
func (v *VCenter) URL() *url.URL {
	return &url.URL{Scheme: "https", Host: v.Host, Path: "/sdk", User: url.UserPassword(User, Password)}
}

// Client logs in to the vCenter, trusting its certificate, for a look
// that does not go through capwin's sessions. The caller logs out.
func (v *VCenter) Client(ctx context.Context) (*govmomi.Client, error) {
	return govmomi.NewClient(ctx, v.URL(), true)
}

// with runs f with a client of its own, logged out afterwards: helpers
// polled by Eventually must not pile sessions up in vCenter.
func (v *VCenter) with(ctx context.Context, f func(*govmomi.Client) error) error {
	c, err := v.Client(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Logout(context.WithoutCancel(ctx)) }()
	return f(c)
}
