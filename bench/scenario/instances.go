package scenario

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/bench/peers"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// InstanceParams sizes the instances scenario.
type InstanceParams struct {
	Clients     int // fresh clients at concurrency 1
	PerClient   int // sequential GETs of each
	Concurrent  int // GETs of the one client at concurrency Concurrency
	Concurrency int
	Seed        uint64 // seeds the balancer's picks
}

// DefaultInstanceParams returns 20 clients of 30 GETs, and 600 GETs at
// concurrency 8.
func DefaultInstanceParams() InstanceParams {
	return InstanceParams{Clients: 20, PerClient: 30, Concurrent: 600, Concurrency: 8, Seed: 1}
}

// An InstanceResult is what one library did in front of several instances
// of a service, one of which fails.
type InstanceResult struct {
	Serial, Concurrent Stats
	// BadPerRequest is the attempts that reached the failing instance per
	// request, at concurrency 1.
	BadPerRequest float64
	// WorstAttempts is the most attempts a request took to succeed, at
	// either concurrency, 0 when none did.
	WorstAttempts int
	// SerialConns and Conns are the connections opened at concurrency 1
	// and at concurrency Concurrency.
	SerialConns, Conns int
	// SerialTLS and ConcurrentTLS are, over TLS, the handshakes the
	// instances completed at concurrency 1 and at concurrency Concurrency.
	SerialTLS, ConcurrentTLS Handshakes
}

// A fleet is a service of several instances a client reaches through one
// URL, with a base transport per client.
type fleet struct {
	url        string
	base       func(lib string) *http.Transport // a fresh base for a client of lib
	servers    []*retryhttptest.Server          // the first is the failing instance
	conns      func() int                       // connections opened so far
	handshakes *handshakeCounter                // nil in the clear
	closeFn    func()
}

// bad returns the attempts that reached the failing instance so far.
func (f *fleet) bad() int { return f.servers[0].Attempts() }

// attempts returns the attempts of the request with IDHeader id that
// reached any instance.
func (f *fleet) attempts(id string) int {
	n := 0
	for _, s := range f.servers {
		n += s.Request(id).Attempts
	}
	return n
}

// A fleetSpec says how a balanced fleet is built.
type fleetSpec struct {
	n    int  // backends, the first answering 503 to everything
	wire wire // cleartext, or over TLS the protocol the backends speak
	// own gives each library its own default base (peers.OwnBase); the
	// others get peers.NewBase.
	own bool
	// sharedKey gives the backends one session ticket key, so that a
	// session one of them issued resumes at any; otherwise each has its own.
	sharedKey bool
}

// balancedFleet starts the backends of spec behind a
// retryhttptest.Balancer seeded with seed.
func balancedFleet(seed uint64, spec fleetSpec) *fleet {
	var urls []string
	var servers []*retryhttptest.Server
	var hs *handshakeCounter
	serverTLS := &tls.Config{}
	if spec.wire != cleartext {
		hs = newHandshakeCounter()
		if spec.sharedKey {
			var key [32]byte
			_, _ = rand.Read(key[:]) // never fails
			serverTLS.SetSessionTicketKeys([][32]byte{key})
		}
	}
	for i := range spec.n {
		f := retryhttptest.Pass()
		if i == 0 {
			f = retryhttptest.Status(http.StatusServiceUnavailable)
		}
		s := retryhttptest.NewUnstartedServer(nil, f, retryhttptest.KeyHeader(IDHeader))
		if spec.wire == cleartext {
			s.Start()
		} else {
			hs.watch(s.Config)
			s.Config.ErrorLog = quiet
			s.TLS = serverTLS // StartTLS clones it, the ticket keys with it
			s.EnableHTTP2 = spec.wire == tlsHTTP2
			s.StartTLS()
		}
		urls = append(urls, s.URL)
		servers = append(servers, s)
	}
	lb := retryhttptest.NewBalancer(seed, urls...)
	url := lb.URL
	var roots *x509.CertPool
	if spec.wire != cleartext {
		url = "https://" + lb.Addr
		roots = servers[0].Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	}
	return &fleet{
		url: url,
		base: func(lib string) *http.Transport {
			if spec.own {
				return peers.OwnBase(lib, roots)
			}
			b := peers.NewBase()
			if roots != nil {
				b.TLSClientConfig = &tls.Config{RootCAs: roots}
				b.ForceAttemptHTTP2 = true
			}
			return b
		},
		servers:    servers,
		conns:      lb.TotalConnections,
		handshakes: hs,
		closeFn: func() {
			lb.Close()
			for _, s := range servers {
				s.Close()
			}
		},
	}
}

// staticResolver answers every name with its addresses, in order, as a
// DNS server with round robin turned off would.
type staticResolver []netip.Addr

func (r staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

// namedFleet starts three servers on the same port of 127.0.0.1, .2 and
// .3, the first answering 503 to everything, reached by a name that
// resolves to the three in that order. Every library's base dials the
// addresses in order until one connects, as net.Dialer does; retryhttp's
// dials with a base.Dialer, whose only difference is that a retry
// dials the addresses that failed last.
func namedFleet(withDialer bool) (*fleet, error) {
	addrs := staticResolver{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	var lns []net.Listener
	var port string
	for range 20 {
		lns = lns[:0]
		first, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		_, port, _ = net.SplitHostPort(first.Addr().String())
		lns = append(lns, first)
		for _, a := range addrs[1:] {
			ln, err := net.Listen("tcp4", net.JoinHostPort(a.String(), port))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) == len(addrs) {
			break
		}
		for _, ln := range lns {
			ln.Close()
		}
	}
	if len(lns) != len(addrs) {
		return nil, fmt.Errorf("no port free on every one of %v", addrs)
	}
	var servers []*retryhttptest.Server
	for i, ln := range lns {
		f := retryhttptest.Pass()
		if i == 0 {
			f = retryhttptest.Status(http.StatusServiceUnavailable)
		}
		s := retryhttptest.NewUnstartedServer(nil, f, retryhttptest.KeyHeader(IDHeader))
		s.Listener.Close()
		s.Listener = ln
		s.Start()
		servers = append(servers, s)
	}
	d := &base.Dialer{Resolver: addrs}
	return &fleet{
		url: "http://svc.test:" + port + "/",
		base: func(string) *http.Transport {
			b := peers.NewBase()
			b.DialContext = d.DialContext
			if !withDialer {
				b.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
					// The same resolution and order, without the
					// addresses a retry would avoid.
					return d.DialContext(noValues{ctx}, network, address)
				}
			}
			return b
		},
		servers: servers,
		conns: func() int {
			n := 0
			for _, s := range servers {
				n += s.Connections()
			}
			return n
		},
		closeFn: func() {
			for _, s := range servers {
				s.Close()
			}
		},
	}, nil
}

// noValues is a context that carries no values, so that a dial made
// through it sees none of a retry's. Only the dialer sees it.
type noValues struct{ context.Context }

func (noValues) Value(any) any { return nil }

// RunInstances runs lib in front of f: ip.Clients fresh clients of
// ip.PerClient sequential GETs each, then one client sending ip.Concurrent
// GETs ip.Concurrency at a time; every client over a fresh base from f.
// Then it closes f, and counts what reached it at concurrency
// ip.Concurrency, connections still being opened at the end included.
func RunInstances(ctx context.Context, lib peers.Library, f *fleet, c peers.Config, ip InstanceParams) InstanceResult {
	var worst, seq atomic.Int64
	send := func(ctx context.Context, rt http.RoundTripper) Outcome {
		id := "i" + strconv.FormatInt(seq.Add(1), 10)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
		if err != nil {
			return Outcome{Err: err}
		}
		req.Header.Set(IDHeader, id)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return Outcome{Err: err}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			for {
				w, n := worst.Load(), int64(f.attempts(id))
				if n <= w || worst.CompareAndSwap(w, n) {
					break
				}
			}
		}
		return Outcome{OK: resp.StatusCode == http.StatusOK, Status: resp.StatusCode}
	}
	var r InstanceResult
	badBefore := f.bad()
	var serial []Outcome
	for range ip.Clients {
		base := f.base(lib.Name)
		rt := lib.New(base, c)
		for range ip.PerClient {
			serial = append(serial, send(ctx, rt))
		}
		closeIdle(rt, base)
	}
	r.Serial = Summarise(serial)
	r.BadPerRequest = float64(f.bad()-badBefore) / float64(len(serial))
	// Exact: at concurrency 1, every connection carried a request, whose
	// handshake was counted before it was answered.
	r.SerialConns, r.SerialTLS = f.conns(), f.handshakes.count()
	base := f.base(lib.Name)
	rt := lib.New(base, c)
	out := Drive(ctx, ip.Concurrent, ip.Concurrency, func(ctx context.Context, _ int) Outcome { return send(ctx, rt) })
	closeIdle(rt, base)
	f.closeFn()
	r.Conns = f.conns() - r.SerialConns
	r.ConcurrentTLS = f.handshakes.count().minus(r.SerialTLS)
	r.Concurrent = Summarise(out)
	r.WorstAttempts = int(worst.Load())
	return r
}

// Instances runs the scenarios in which one instance of a service fails:
// behind a balancer that pins connections (one bad backend of five, then of
// three, then of five over HTTP/2), and behind a name with three addresses,
// the first failing; then what connections an outage costs, and what
// requests multiplexed on one HTTP/2 connection cost when each fails once.
func Instances(ctx context.Context, p Params) []Table {
	ip := DefaultInstanceParams()
	ip.Seed = p.Seed
	header := []string{"library", "success, concurrency 1", "attempts at the bad instance per request", "success, concurrency " + strconv.Itoa(ip.Concurrency), "connections, concurrency " + strconv.Itoa(ip.Concurrency), "most attempts of a success"}
	note := fmt.Sprintf("%d fresh clients of %d sequential GETs each, then one client sending %d GETs %d at a time; "+
		"every client over a fresh base transport (http.DefaultTransport's settings). Fast backoff; budgets as each "+
		"library has them by default.", ip.Clients, ip.PerClient, ip.Concurrent, ip.Concurrency)
	var tables []Table
	for _, sc := range []struct {
		title string
		n     int
		wire  wire
	}{
		{"one bad backend of five behind a connection-pinning balancer", 5, cleartext},
		{"one bad backend of three behind a connection-pinning balancer", 3, cleartext},
		{"one bad backend of five behind a connection-pinning balancer, over HTTP/2", 5, tlsHTTP2},
	} {
		t := Table{Title: "instances: " + sc.title, Note: note + fmt.Sprintf(" The balancer's picks are seeded with %d.", ip.Seed), Header: header}
		for _, lib := range peers.All() {
			f := balancedFleet(ip.Seed, fleetSpec{n: sc.n, wire: sc.wire})
			t.Add(instanceRow(lib.Name, RunInstances(ctx, lib, f, p.Fast, ip))...)
		}
		tables = append(tables, t)
	}
	t := Table{
		Title: "instances: a name with three addresses, the first answering 503",
		Note: note + " Every base dials the addresses in the resolver's order until one connects, as net.Dialer " +
			"does; retryhttp's dials through base.Dialer, which dials the addresses a request failed at last.",
		Header: header,
	}
	for _, lib := range peers.All() {
		for _, dialer := range []bool{false, true} {
			if dialer && lib.Name != peers.RetryHTTP {
				continue
			}
			name := lib.Name
			if lib.Name == peers.RetryHTTP && !dialer {
				name += " without base.Dialer"
			}
			f, err := namedFleet(dialer)
			if err != nil {
				t.Add(name, "error: "+err.Error())
				continue
			}
			t.Add(instanceRow(name, RunInstances(ctx, lib, f, p.Fast, ip))...)
		}
	}
	tables = append(tables, t)
	return append(tables, outageConnections(ctx, p), Multiplexed(ctx, p))
}

// outageConnections runs the outage (every attempt answers 503) and counts
// the connections each library opened: a retry that leaves its connection
// costs one, and the AWS retryer, which never leaves one, sets the floor.
func outageConnections(ctx context.Context, p Params) Table {
	t := Table{
		Title: "instances: the connections an outage costs",
		Note: fmt.Sprintf("%d GETs, %d at a time, to a server that answers 503 to everything; every library over "+
			"the same kind of base transport (128 idle connections per host). Retries are the server's requests "+
			"beyond one per GET; connections are those the server accepted (at least %d, the concurrency). Fast "+
			"backoff; budgets as each library has them by default.", p.Outage, p.Concurrency, p.Concurrency),
		Header: []string{"library", "amplification", "retries", "connections"},
	}
	for _, lib := range peers.All() {
		r := RunOutage(ctx, lib, peers.NewBase(), p.Fast, p.Outage, p.Concurrency)
		retries := r.ServerCalls - int64(r.Requests)
		t.Add(lib.Name, r.Amplification, strconv.FormatInt(retries, 10), strconv.FormatInt(r.ServerConns, 10))
	}
	return t
}

// instanceRow formats r as a table row.
func instanceRow(name string, r InstanceResult) []string {
	return []string{name, r.Serial.SuccessRate(), strconv.FormatFloat(r.BadPerRequest, 'f', 3, 64),
		r.Concurrent.SuccessRate(), strconv.Itoa(r.Conns), strconv.Itoa(r.WorstAttempts)}
}
