package vspheresim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// gate is the vCenter's network address: a TCP relay to vcsim that can be
// taken down, as a vCenter that is unreachable is (its port refuses
// connections, and open ones are cut), and brought back on the same
// address.
type gate struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newGate(target string) (*gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gate{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	g.serve(ln)
	return g, nil
}

func (g *gate) serve(ln net.Listener) {
	g.ln = ln
	g.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.wg.Go(func() { g.relay(c) })
		}
	})
}

// relay copies between c and a new connection to vcsim until either ends.
func (g *gate) relay(c net.Conn) {
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !g.track(c, up) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	g.mu.Lock()
	delete(g.conns, c)
	delete(g.conns, up)
	g.mu.Unlock()
	_ = c.Close()
	_ = up.Close()
	<-done
}

// track records a relayed pair, or closes it when the gate went down
// meanwhile.
func (g *gate) track(c, up net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln == nil {
		_ = c.Close()
		_ = up.Close()
		return false
	}
	g.conns[c], g.conns[up] = struct{}{}, struct{}{}
	return true
}

// down closes the address and cuts every open connection.
func (g *gate) down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln == nil {
		return
	}
	_ = g.ln.Close()
	g.ln = nil
	for c := range g.conns {
		_ = c.Close()
	}
	clear(g.conns)
}

// up listens on the address again.
func (g *gate) up() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		return fmt.Errorf("listening on %s again: %w", g.addr, err)
	}
	g.serve(ln)
	return nil
}

func (g *gate) close() {
	g.down()
	g.wg.Wait()
}

// SetReachable makes the vCenter unreachable (false): its address refuses
// connections and the open ones are cut, as when vCenter or the network to
// it is down. true brings it back on the same address, with its sessions,
// tasks and VMs as they were.
func (v *VCenter) SetReachable(reachable bool) error {
	if v.gate == nil {
		return errors.New("the vCenter simulator was not started")
	}
	if reachable {
		return v.gate.up()
	}
	v.gate.down()
	return nil
}
