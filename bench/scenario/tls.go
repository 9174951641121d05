package scenario

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// TLS runs the transient, outage and one-bad-backend scenarios over TLS,
// HTTP/1.1 and HTTP/2, each library over its own default base given the
// servers' certificate authority alone, and counts the handshakes the
// servers completed, full and resumed.
func TLS(ctx context.Context, p Params) []Table {
	own := "Each library over its own default base transport, trusting the server's certificate: retryhttp " +
		"go-cleanhttp's pooled transport with 100 idle connections per host and a TLS session cache, " +
		"go-retryablehttp go-cleanhttp's (GOMAXPROCS+1 idle per host), the AWS SDK its BuildableClient's (10), " +
		"the others http.DefaultTransport's (2); only retryhttp's resumes TLS sessions. Connections are those " +
		"the server accepted; handshakes those it completed, resumed when crypto/tls says so (DidResume). The " +
		"connections beyond the handshakes were closed before theirs ended: closing idle connections, as " +
		"go-retryablehttp does after a request it gives up on, cancels the dials no request waits for, and " +
		"the server's close at the end of a run cuts those still under way. " +
		"Fast backoff; budgets as each library has them by default."
	header := []string{"library", "protocol", "success", "connections", "full handshakes", "resumed handshakes"}
	transient := Table{
		Title: "tls: 10% of attempts answer 503",
		Note: fmt.Sprintf("%d GETs, %d at a time, over TLS (loopback); an attempt fails when a hash of (seed %d, "+
			"request, attempt) falls below 0.1, as in the transient scenario. ", p.Transient, p.Concurrency, p.Seed) + own,
		Header: header,
	}
	outage := Table{
		Title: "tls: every attempt answers 503",
		Note: fmt.Sprintf("%d GETs, %d at a time, over TLS (loopback), to a server that answers 503 to "+
			"everything. ", p.Outage, p.Concurrency) + own,
		Header: header,
	}
	row := func(t *Table, lib string, w wire, ok, n int, srv *Server) {
		hs := srv.Handshakes()
		t.Add(lib, w.String(), Percent(ok, n), strconv.FormatInt(srv.Conns(), 10), strconv.Itoa(hs.Full), strconv.Itoa(hs.Resumed))
	}
	for _, w := range []wire{tlsHTTP1, tlsHTTP2} {
		for _, lib := range peers.All() {
			srv := newServer(FailRandomly(p.Seed, 0.10), w)
			s := runTransient(ctx, srv, client(lib, peers.OwnBase(lib.Name, srv.RootCAs()), p.Fast), p)
			row(&transient, lib.Name, w, s.OK, s.N, srv)
			srv = newServer(Fail(http.StatusServiceUnavailable), w)
			r := runOutage(ctx, srv, client(lib, peers.OwnBase(lib.Name, srv.RootCAs()), p.Fast), p.Outage, p.Concurrency)
			row(&outage, lib.Name, w, r.OK, r.Requests, srv)
		}
	}
	return []Table{transient, outage, tlsInstances(ctx, p)}
}

// tlsInstances runs the one bad backend of five behind a
// connection-pinning balancer over TLS.
func tlsInstances(ctx context.Context, p Params) Table {
	ip := DefaultInstanceParams()
	ip.Seed = p.Seed
	c := "concurrency 1 / " + strconv.Itoa(ip.Concurrency)
	t := Table{
		Title: "tls: one bad backend of five behind a connection-pinning balancer",
		Note: fmt.Sprintf("%d fresh clients of %d sequential GETs each (concurrency 1), then one client sending "+
			"%d GETs %d at a time; every client over a fresh base transport of its library's own, trusting the "+
			"backends' certificate. The balancer pipes each TCP connection to a backend it draws (seeded with "+
			"%d). The backends terminate TLS and share one session ticket key, so that a session resumes at "+
			"any of them, but in the row that gives each its own. Handshakes are those the backends completed. "+
			"Over HTTP/2 the first %[4]d requests open %[4]d connections and the others ride one of them: a "+
			"client that does not leave it succeeds on all or none, by the backend it reached. Fast backoff; "+
			"budgets as each library has them by default.", ip.Clients, ip.PerClient, ip.Concurrent, ip.Concurrency, ip.Seed),
		Header: []string{"library", "protocol", "success, " + c, "connections, " + c, "full handshakes, " + c, "resumed handshakes, " + c},
	}
	pair := func(a, b int) string { return strconv.Itoa(a) + " / " + strconv.Itoa(b) }
	row := func(name string, lib peers.Library, spec fleetSpec) {
		r := RunInstances(ctx, lib, balancedFleet(ip.Seed, spec), p.Fast, ip)
		t.Add(name, spec.wire.String(), r.Serial.SuccessRate()+" / "+r.Concurrent.SuccessRate(), pair(r.SerialConns, r.Conns),
			pair(r.SerialTLS.Full, r.ConcurrentTLS.Full), pair(r.SerialTLS.Resumed, r.ConcurrentTLS.Resumed))
	}
	for _, w := range []wire{tlsHTTP1, tlsHTTP2} {
		for _, lib := range peers.All() {
			row(lib.Name, lib, fleetSpec{n: 5, wire: w, own: true, sharedKey: true})
			if lib.Name == peers.RetryHTTP {
				row(lib.Name+", a ticket key per backend", lib, fleetSpec{n: 5, wire: w, own: true})
			}
		}
	}
	return t
}
