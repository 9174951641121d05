package retryhttptest

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// A Balancer is a TCP load balancer on loopback in front of several
// backends, as kube-proxy is in front of a Kubernetes Service's pods and a
// network load balancer in front of its targets: each connection a client
// opens is piped, for its whole life, to one backend, drawn at random by a
// generator seeded with the seed given to NewBalancer, so that a run can be
// repeated. Every request sent down a connection reaches the same backend,
// retries included, unless the client opens another connection.
//
// Give each backend its faults by making it a Server (one answering
// Status(503) to everything plays an instance that is failing), and point
// the client at URL. A backend that cannot be reached costs the client's
// connection: it is closed as soon as it is accepted.
//
// It is safe to read the counts while the balancer runs.
type Balancer struct {
	// URL is the balancer's base URL, "http://127.0.0.1:port".
	URL string
	// Addr is the balancer's listening address, "127.0.0.1:port".
	Addr string

	ln       net.Listener
	backends []string
	counts   []atomic.Int64

	mu     sync.Mutex
	rng    *rand.Rand
	conns  map[net.Conn]struct{}
	done   bool
	wg     sync.WaitGroup
	ctx    context.Context // ends dials to backends on Close
	cancel context.CancelFunc
}

// NewBalancer starts and returns a balancer over backends, each a
// "host:port" or a base URL such as a Server's URL, picking among them with
// a generator seeded with seed. It panics when there is no backend or when
// it cannot listen, as setup failures do in net/http/httptest.
func NewBalancer(seed uint64, backends ...string) *Balancer {
	if len(backends) == 0 {
		panic("retryhttptest: NewBalancer: no backend")
	}
	b := &Balancer{
		backends: make([]string, len(backends)),
		counts:   make([]atomic.Int64, len(backends)),
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		conns:    make(map[net.Conn]struct{}),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	for i, be := range backends {
		b.backends[i] = hostPort(be)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("retryhttptest: NewBalancer: " + err.Error())
	}
	b.ln, b.Addr, b.URL = ln, ln.Addr().String(), "http://"+ln.Addr().String()
	b.wg.Add(1)
	go b.accept()
	return b
}

// hostPort returns the "host:port" of a backend given as a base URL, or s
// as it is.
func hostPort(s string) string {
	for _, scheme := range []string{"http://", "https://"} {
		if len(s) > len(scheme) && s[:len(scheme)] == scheme {
			s = s[len(scheme):]
			for i := 0; i < len(s); i++ {
				if s[i] == '/' {
					return s[:i]
				}
			}
			return s
		}
	}
	return s
}

// Connections returns how many connections the balancer has piped to
// backend i, in the order given to NewBalancer.
func (b *Balancer) Connections(i int) int { return int(b.counts[i].Load()) }

// TotalConnections returns how many connections clients have opened to the
// balancer.
func (b *Balancer) TotalConnections() int {
	n := 0
	for i := range b.counts {
		n += int(b.counts[i].Load())
	}
	return n
}

// Close stops accepting, closes every connection piped through the
// balancer, and waits until their pipes have ended.
func (b *Balancer) Close() {
	b.ln.Close()
	b.cancel()
	b.mu.Lock()
	b.done = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// accept pipes each accepted connection to a backend until the listener
// closes.
func (b *Balancer) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		i := b.rng.IntN(len(b.backends))
		if b.done {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		b.counts[i].Add(1)
		go b.pipe(c, b.backends[i])
	}
}

// pipe copies bytes both ways between the client's connection c and a new
// connection to backend, until either side ends; then it closes both.
func (b *Balancer) pipe(c net.Conn, backend string) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
		c.Close()
	}()
	var d net.Dialer
	u, err := d.DialContext(b.ctx, "tcp", backend)
	if err != nil {
		return
	}
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		u.Close()
		return
	}
	b.conns[u] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.conns, u)
		b.mu.Unlock()
		u.Close()
	}()
	ended := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(u, c)
		ended <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c, u)
		ended <- struct{}{}
	}()
	<-ended
	// One side ended: end the other, and wait for its copy.
	c.Close()
	u.Close()
	<-ended
}

// String describes the balancer and its backends, for test messages.
func (b *Balancer) String() string {
	s := "balancer " + b.Addr + " over"
	for i, be := range b.backends {
		s += " " + be + " (" + strconv.Itoa(b.Connections(i)) + " connections)"
	}
	return s
}
