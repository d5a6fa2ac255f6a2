package vsphere

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"golang.org/x/sync/singleflight"

	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/sharedread"
)

// Credentials reach one vCenter as one user.
type Credentials struct {
	// Server is the vCenter host (or host:port).
	Server     string
	Username   string
	Password   string
	Thumbprint string
	Insecure   bool
}

// key identifies a session: the server, the user and a hash of the
// password, so that changed credentials get a new session.
func (c Credentials) key() string {
	sum := sha256.Sum256([]byte(c.Server + "\x00" + c.Username + "\x00" + c.Password + "\x00" + c.Thumbprint + fmt.Sprint(c.Insecure)))
	return hex.EncodeToString(sum[:])
}

// Session is a logged-in vCenter client shared by every machine that uses
// the same server and credentials.
type Session struct {
	Client *vim25.Client
	// cache holds inventory lookups (templates, folders, pools, datastores,
	// networks) by datacenter and path: they rarely change, and finding one
	// costs several round trips.
	cache sync.Map
	// lookups share the inventory lookups not yet cached.
	lookups singleflight.Group
	// views are the recent reads of the VMs the session found, shared by
	// the resyncs of their machines (viewed), through list.
	views *sharedread.Reads[*vmsView]
	list  listView
	// batch gathers concurrent reconciles' reads of tasks and VMs into
	// one call.
	batch batch
	// used is when Get last handed the session out, in Unix nanoseconds.
	used atomic.Int64
	// key is its credentials' key in Sessions.
	key string
}

// Sessions keeps one long-lived session per server and credentials.
type Sessions struct {
	mu       sync.Mutex
	sessions map[string]*Session
	// login serialises logins per key so concurrent reconciles open one session.
	login map[string]*sync.Mutex

	opened     atomic.Int64
	roundTrips atomic.Int64

	// KeepAlive is how long a session may idle before a keep-alive call;
	// vCenter ends idle sessions after 30 minutes.
	KeepAlive time.Duration
	// IdleLogout is how long a session may go unused before Start logs it
	// out: the session of credentials that were rotated, or of a cluster
	// that was deleted, is not kept alive forever.
	IdleLogout time.Duration
	// CallTimeout bounds each call to vCenter, so that a vCenter that
	// stops answering holds no reconcile forever. Zero means no bound.
	CallTimeout time.Duration
	// Transport, if set, wraps the SOAP transport (tests inject faults).
	Transport func(soap.RoundTripper) soap.RoundTripper
}

// DefaultCallTimeout is NewSessions' CallTimeout. vCenter answers a call
// in well under a second; the slow work (clones, power operations) runs in
// tasks that are polled, not waited for in one call.
const DefaultCallTimeout = time.Minute

// UserAgent is what vCenter shows as the user agent of capwin's sessions.
const UserAgent = "capwin-manager"

// NewSessions returns an empty session cache.
func NewSessions() *Sessions {
	return &Sessions{sessions: map[string]*Session{}, login: map[string]*sync.Mutex{},
		KeepAlive: 5 * time.Minute, IdleLogout: 30 * time.Minute, CallTimeout: DefaultCallTimeout}
}

// Opened is how many sessions were logged in.
func (s *Sessions) Opened() int64 { return s.opened.Load() }

// RoundTrips is how many SOAP calls all sessions made.
func (s *Sessions) RoundTrips() int64 { return s.roundTrips.Load() }

// Get returns the session for creds, logging in when there is none.
func (s *Sessions) Get(ctx context.Context, creds Credentials) (*Session, error) {
	k := creds.key()
	s.mu.Lock()
	if sess, ok := s.sessions[k]; ok {
		sess.used.Store(time.Now().UnixNano())
		s.mu.Unlock()
		return sess, nil
	}
	l, ok := s.login[k]
	if !ok {
		l = &sync.Mutex{}
		s.login[k] = l
	}
	s.mu.Unlock()

	l.Lock()
	defer l.Unlock()
	s.mu.Lock()
	if sess, ok := s.sessions[k]; ok {
		sess.used.Store(time.Now().UnixNano())
		s.mu.Unlock()
		return sess, nil
	}
	s.mu.Unlock()

	sess, err := s.open(ctx, creds)
	if err != nil {
		return nil, err
	}
	sess.used.Store(time.Now().UnixNano())
	sess.key = k
	s.mu.Lock()
	s.sessions[k] = sess
	s.mu.Unlock()
	return sess, nil
}

// LogoutIdle logs out of, and forgets, the sessions Get has not handed out
// for idle or longer; idle 0 means every session. A caller still holding
// one gets NotAuthenticated, which Stale reports, and logs in again.
func (s *Sessions) LogoutIdle(ctx context.Context, idle time.Duration) (int, error) {
	cutoff := time.Now().Add(-idle).UnixNano()
	var idled []*Session
	s.mu.Lock()
	for k, sess := range s.sessions {
		if sess.used.Load() <= cutoff {
			idled = append(idled, sess)
			delete(s.sessions, k)
		}
	}
	s.mu.Unlock()
	// Logging out also stops a session's keep-alive. The logouts run side
	// by side, and this returns when ctx ends even if vCenter does not
	// answer (each call then ends in CallTimeout).
	done := make(chan error, len(idled))
	for _, sess := range idled {
		go func() {
			err := session.NewManager(sess.Client).Logout(ctx)
			if isFault[*types.NotAuthenticated](err) {
				err = nil // vCenter had ended it already
			}
			done <- err
		}()
	}
	var errs []error
	for range idled {
		select {
		case err := <-done:
			errs = append(errs, err)
		case <-ctx.Done():
			return len(idled), errors.Join(append(errs, ctx.Err())...)
		}
	}
	return len(idled), errors.Join(errs...)
}

// Start logs out of sessions idle for IdleLogout (checking every minute;
// never if IdleLogout is 0), and of every session when ctx ends, so that a
// stopped controller leaves no session in vCenter. It is a
// controller-runtime Runnable and logs with ctx's logger.
func (s *Sessions) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	var tick <-chan time.Time
	if s.IdleLogout > 0 {
		t := time.NewTicker(min(time.Minute, s.IdleLogout))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			bye, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n, err := s.LogoutIdle(bye, 0)
			if err != nil {
				// vCenter ends them after 30 idle minutes.
				log.Error(err, "Logging out of vCenter sessions at shutdown")
			}
			log.V(2).Info("Logged out of vCenter sessions at shutdown", "sessions", n)
			return nil
		case <-tick:
			n, err := s.LogoutIdle(ctx, s.IdleLogout)
			if err != nil {
				log.Error(err, "Logging out of idle vCenter sessions")
			}
			if n > 0 {
				log.Info("Logged out of idle vCenter sessions", "sessions", n, "idle", s.IdleLogout)
			}
		}
	}
}

// Forget drops sess, after vCenter said it is no longer authenticated; the
// next Get logs in again. A newer session of the same credentials, which
// another reconcile may have opened since, is kept.
func (s *Sessions) Forget(sess *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[sess.key] == sess {
		delete(s.sessions, sess.key)
	}
}

// ErrLogin is wrapped by a failed login (bad credentials).
var ErrLogin = platform.NewError(platform.ErrAuthentication, "vCenter login failed")

// ErrConnect is wrapped when vCenter cannot be reached or its certificate
// does not match the thumbprint.
var ErrConnect = platform.NewError(platform.ErrUnavailable, "cannot connect to vCenter")

// ErrTimeout is wrapped when vCenter does not answer a call within the
// sessions' CallTimeout.
var ErrTimeout = platform.NewError(platform.ErrUnavailable, "vCenter did not answer")

func (s *Sessions) open(ctx context.Context, creds Credentials) (*Session, error) {
	u, err := soap.ParseURL(creds.Server)
	if err != nil {
		return nil, fmt.Errorf("%w: server %q: %w", ErrConnect, creds.Server, err)
	}
	sc := soap.NewClient(u, creds.Insecure)
	sc.UserAgent = UserAgent
	if creds.Thumbprint != "" {
		sc.SetThumbprint(u.Host, creds.Thumbprint)
	}
	var rt soap.RoundTripper = &counter{RoundTripper: sc, n: &s.roundTrips}
	if s.Transport != nil {
		rt = s.Transport(rt)
	}
	rt = &deadline{RoundTripper: rt, d: s.CallTimeout}
	vc, err := vim25.NewClient(ctx, rt)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrConnect, u.Host, err)
	}
	// Keep the session from idling out, and log in again should vCenter
	// have ended it anyway.
	// The keep-alive outlives the reconcile that opened the session, so it
	// does not use its context.
	vc.RoundTripper = keepalive.NewHandlerSOAP(vc.RoundTripper, s.KeepAlive, func() error {
		_, err := methods.GetCurrentTime(context.Background(), vc)
		return err
	})
	if err := session.NewManager(vc).Login(ctx, url.UserPassword(creds.Username, creds.Password)); err != nil {
		if isFault[*types.InvalidLogin](err) {
			return nil, fmt.Errorf("%w for user %s on %s: the user name or password is wrong", ErrLogin, creds.Username, u.Host)
		}
		return nil, fmt.Errorf("%w %s: logging in: %w", ErrConnect, u.Host, err)
	}
	s.opened.Add(1)
	return &Session{Client: vc, views: newViews()}, nil
}

// counter counts SOAP round trips.
type counter struct {
	soap.RoundTripper
	n *atomic.Int64
}

func (c *counter) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	c.n.Add(1)
	return c.RoundTripper.RoundTrip(ctx, req, res)
}

// deadline bounds each SOAP call by d.
type deadline struct {
	soap.RoundTripper
	d time.Duration
}

func (c *deadline) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if c.d <= 0 {
		return c.RoundTripper.RoundTrip(ctx, req, res)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	err := c.RoundTripper.RoundTrip(callCtx, req, res)
	if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w %s within %s: %w", ErrTimeout, method(req), c.d, err)
	}
	return err
}

// method names a SOAP call by its request type (methods.CloneVM_TaskBody
// is CloneVM_Task).
func method(req soap.HasFault) string {
	t := reflect.TypeOf(req)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.TrimSuffix(t.Name(), "Body")
}

// unreachable reports whether err says a call did not reach vCenter, or
// its connection was cut before vCenter answered (refused, reset, closed),
// and says so in no other way (a timeout is ErrTimeout).
func unreachable(err error) bool {
	if err == nil || errors.Is(err, platform.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// isFault reports whether err is, or carries, a vSphere fault of type T.
func isFault[T types.BaseMethodFault](err error) bool {
	if err == nil {
		return false
	}
	var target T
	return fault.Is(err, reflect.New(reflect.TypeOf(target).Elem()).Interface().(types.BaseMethodFault))
}

// Stale reports whether err, from a call on sess, says sess is no longer
// logged in (vCenter ended it, or LogoutIdle did); sess is then forgotten
// so that the next Get logs in.
func (s *Sessions) Stale(err error, sess *Session) bool {
	if isFault[*types.NotAuthenticated](err) {
		s.Forget(sess)
		return true
	}
	return false
}

// CheckDatacenter returns ErrNotFound when the datacenter does not exist.
func (s *Session) CheckDatacenter(ctx context.Context, path string) error {
	_, err := s.datacenter(ctx, path)
	return err
}
