package retryhttp_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// roundTrip sends a GET of url through rt and returns its status and attempts,
// reading and closing the body; an error fails the test.
func roundTrip(t *testing.T, rt http.RoundTripper, url string) (int, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, retryhttp.Attempts(resp)
}

// TestRetryLeavesTheConnectionThatFailed proves that the retry of a 5xx on
// a connection that never served is sent on a new connection, the failed
// one closed, while a final response, a success and a throttled response
// keep theirs. A Transport with a hook traces every attempt; one without
// traces a host's attempts only once it failed, so that the first failure
// is judged without evidence: a connection with a body to close is left,
// one net/http pooled (a 5xx without a body) is kept.
func TestRetryLeavesTheConnectionThatFailed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		name      string
		fault     retryhttptest.Fault
		netDialer bool // the base dials with net.Dialer, not base.Dialer
		attempts  int  // of the first request
		wantConns int  // after two requests, traced
		untraced  int  // after two requests, untraced
	}{
		{"5xx then success", retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)), false, 2, 2, 2},
		{"5xx with an empty body, through a Dialer", retryhttptest.First(1, retryhttptest.Respond(http.StatusBadGateway, nil, "")), false, 2, 2, 1},
		// net/http pooled the connection: the retry, which gets it,
		// closes it after its response.
		{"5xx with an empty body", retryhttptest.First(1, retryhttptest.Respond(http.StatusBadGateway, nil, "")), true, 2, 2, 1},
		{"success", retryhttptest.Pass(), false, 1, 1, 1},
		{"final 5xx", retryhttptest.Status(http.StatusInternalServerError), false, 1, 1, 1},
		{"throttled", retryhttptest.First(1, retryhttptest.RetryAfter(http.StatusTooManyRequests, 0)), false, 2, 1, 1},
	} {
		for _, traced := range []bool{true, false} {
			t.Run(tc.name+"/traced="+strconv.FormatBool(traced), func(t *testing.T) {
				srv := retryhttptest.NewServer(nil, tc.fault)
				defer srv.Close()
				dialing := &http.Transport{DialContext: base.NewDialer().DialContext}
				if tc.netDialer {
					dialing.DialContext = nil
				}
				defer dialing.CloseIdleConnections()
				max := 3
				if tc.name == "final 5xx" {
					max = 1
				}
				opts := []retryhttp.Option{retryhttp.WithBase(dialing), retryhttp.WithMaxAttempts(max),
					retryhttp.WithBackoff(backoff.Constant(0)), retryhttp.WithThrottleBackoff(backoff.Constant(0))}
				want := tc.untraced
				if traced {
					opts, want = append(opts, retryhttp.WithOnRetry(func(retryhttp.RetryEvent) {})), tc.wantConns
				}
				rt := retryhttp.New(opts...)
				_, n := roundTrip(t, rt, srv.URL)
				assert.Equal(t, tc.attempts, n, "attempts of the first request")
				roundTrip(t, rt, srv.URL)
				assert.Equal(t, want, srv.Connections(), "connections opened by two requests")
			})
		}
	}
}

// TestRetryEventNamesThePeer proves that the address of the failed
// attempt's connection reaches the retry hook and the log.
func TestRetryEventNamesThePeer(t *testing.T) {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()
	var logs bytes.Buffer
	var peers []netip.AddrPort
	rt := retryhttp.New(retryhttp.WithBackoff(backoff.Constant(0)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { peers = append(peers, e.Peer) }),
		retryhttp.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer rt.CloseIdleConnections()
	code, _ := roundTrip(t, rt, srv.URL)
	require.Equal(t, http.StatusOK, code)
	want := netip.MustParseAddrPort(srv.Listener.Addr().String())
	require.Equal(t, []netip.AddrPort{want}, peers)
	assert.Contains(t, logs.String(), "network.peer.address="+want.Addr().String())
	assert.Contains(t, logs.String(), "network.peer.port="+strconv.Itoa(int(want.Port())))
}

// TestPeerIsZeroWithoutConnection proves that an attempt that got no
// connection reports no peer.
func TestPeerIsZeroWithoutConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	var events []retryhttp.RetryEvent
	rt := retryhttp.New(retryhttp.WithBackoff(backoff.Constant(0)), retryhttp.WithMaxAttempts(2),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { events = append(events, e) }))
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	_, err = rt.RoundTrip(req)
	require.Error(t, err)
	require.Len(t, events, 1)
	assert.False(t, events[0].Peer.IsValid())
}

// TestBehindABalancerRetriesReachAnotherBackend is the case of a pod that
// fails behind a Kubernetes Service: one backend of five answers 503 to
// everything, and each of 20 fresh clients at its defaults over a plain
// *http.Transport sends 30 GETs one after another. Sent down the
// connection that failed, a retry meets the same backend, and every
// request of a client whose connection landed there fails.
func TestBehindABalancerRetriesReachAnotherBackend(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lb, bad, closeAll := oneBadOfFive(7)
	defer closeAll()
	ok, total := 0, 0
	for range 20 {
		base := &http.Transport{}
		rt := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)))
		for range 30 {
			code, _ := roundTrip(t, rt, lb.URL)
			total++
			if code == http.StatusOK {
				ok++
			}
		}
		base.CloseIdleConnections()
	}
	success := float64(ok) / float64(total)
	perRequest := float64(bad.Attempts()) / float64(total)
	t.Logf("success %.4f, bad-backend attempts per request %.4f, %v", success, perRequest, lb)
	assert.GreaterOrEqual(t, success, 0.995, "success")
	assert.LessOrEqual(t, perRequest, 0.05, "attempts at the bad backend per request")
}

// TestOutageCostsAConnectionPerRetryGranted proves that a service down for
// everyone costs about as many connections as the concurrency plus the
// retries the budget granted: a final response keeps its connection.
func TestOutageCostsAConnectionPerRetryGranted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable))
	defer srv.Close()
	var retries atomic.Int64
	rt := retryhttp.New(retryhttp.WithBackoff(backoff.Constant(0)),
		retryhttp.WithOnRetry(func(retryhttp.RetryEvent) { retries.Add(1) }))
	defer rt.CloseIdleConnections()
	const workers, each = 4, 100
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				roundTrip(t, rt, srv.URL)
			}
		})
	}
	wg.Wait()
	t.Logf("%d requests, %d retries, %d connections", workers*each, retries.Load(), srv.Connections())
	require.Positive(t, retries.Load())
	assert.LessOrEqual(t, float64(retries.Load()), 0.26*workers*each, "retries granted by the default budget")
	// A retry's dial may lose the race to a connection another request
	// frees; net/http pools the loser, up to one per worker.
	assert.LessOrEqual(t, int64(srv.Connections()), 2*workers+retries.Load(), "connections opened")
}

// resolver answers every name with its addresses, in order.
type resolver []netip.Addr

func (r resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

// listenAll listens on the same free port of every address, and returns
// the listeners and the port.
func listenAll(t *testing.T, addrs []netip.Addr) ([]net.Listener, string) {
	t.Helper()
	for range 20 {
		first, err := net.Listen("tcp", net.JoinHostPort(addrs[0].String(), "0"))
		require.NoError(t, err)
		_, port, _ := net.SplitHostPort(first.Addr().String())
		lns := []net.Listener{first}
		for _, a := range addrs[1:] {
			ln, err := net.Listen("tcp", net.JoinHostPort(a.String(), port))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) == len(addrs) {
			return lns, port
		}
		for _, ln := range lns {
			ln.Close()
		}
	}
	t.Fatalf("no port free on every one of %v", addrs)
	return nil, ""
}

// TestRetryDialsAnotherAddress is a name with three addresses, the first
// of which answers 503 to everything: through a Dialer, each request
// succeeds within two attempts, at concurrency 1 and 8, for the retry
// dials the other addresses first.
func TestRetryDialsAnotherAddress(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addrs := resolver{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	lns, port := listenAll(t, addrs)
	servers := make([]*retryhttptest.Server, len(lns))
	for i, ln := range lns {
		f := retryhttptest.Pass()
		if i == 0 {
			f = retryhttptest.Status(http.StatusServiceUnavailable)
		}
		s := retryhttptest.NewUnstartedServer(nil, f)
		s.Listener.Close()
		s.Listener = ln
		s.Start()
		defer s.Close()
		servers[i] = s
	}
	url := "http://svc.test:" + port + "/"
	for _, workers := range []int{1, 8} {
		t.Run("concurrency "+strconv.Itoa(workers), func(t *testing.T) {
			dialing := &http.Transport{DialContext: (&base.Dialer{Resolver: addrs}).DialContext}
			defer dialing.CloseIdleConnections()
			// The hook traces every attempt, the first included.
			rt := retryhttp.New(retryhttp.WithBase(dialing), retryhttp.WithBackoff(backoff.Constant(0)),
				retryhttp.WithoutBudget(), retryhttp.WithOnGiveUp(func(retryhttp.GiveUpEvent) {}))
			var wg sync.WaitGroup
			var mu sync.Mutex
			worst := 0
			for range workers {
				wg.Go(func() {
					for range 40 {
						// A fresh connection for each request: its first
						// attempt dials 127.0.0.1 first.
						req, _ := http.NewRequest(http.MethodGet, url, nil)
						req.Close = true
						resp, err := rt.RoundTrip(req)
						if !assert.NoError(t, err) {
							return
						}
						resp.Body.Close()
						assert.Equal(t, http.StatusOK, resp.StatusCode)
						mu.Lock()
						worst = max(worst, retryhttp.Attempts(resp))
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			assert.LessOrEqual(t, worst, 2, "attempts of the worst request")
			assert.Positive(t, servers[0].Attempts(), "first attempts reached the first address")
		})
	}
}

// TestDialerKeepsTheResolverOrderForAFirstAttempt proves that without a
// failure to avoid, a Dialer dials the addresses in the resolver's order,
// falling through those that refuse.
func TestDialerKeepsTheResolverOrderForAFirstAttempt(t *testing.T) {
	addrs := resolver{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	lns, port := listenAll(t, addrs)
	lns[0].Close() // the first address refuses
	srv := retryhttptest.NewUnstartedServer(nil, retryhttptest.Pass())
	srv.Listener.Close()
	srv.Listener = lns[1]
	srv.Start()
	defer srv.Close()
	d := &base.Dialer{Resolver: addrs}
	c, err := d.DialContext(context.Background(), "tcp", "svc.test:"+port)
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, "127.0.0.3:"+port, c.RemoteAddr().String())
}

// TestTracedAttemptKeepsCallerTrace proves that the caller's own trace
// still sees the connection, the write and the rest when the Transport
// traces them too.
func TestTracedAttemptKeepsCallerTrace(t *testing.T) {
	srv := retryhttptest.NewServer(nil, retryhttptest.Pass())
	defer srv.Close()
	rt := retryhttp.New()
	defer rt.CloseIdleConnections()
	var getConn, gotConn, wrote, firstByte atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GetConn:              func(string) { getConn.Add(1) },
		GotConn:              func(httptrace.GotConnInfo) { gotConn.Add(1) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote.Add(1) },
		GotFirstResponseByte: func() { firstByte.Add(1) },
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for name, n := range map[string]*atomic.Int32{"GetConn": &getConn, "GotConn": &gotConn, "WroteRequest": &wrote, "GotFirstResponseByte": &firstByte} {
		assert.Equal(t, int32(1), n.Load(), name)
	}
}

// TestRetryRefusesAPooledConnectionToAFailedAddress proves that a retry
// that leaves its connection (here the server closes it) does not take an
// idle connection to the address that failed it: net/http sends the retry
// on a connection to another address instead.
func TestRetryRefusesAPooledConnectionToAFailedAddress(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addrs := resolver{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	lns, port := listenAll(t, addrs)
	var failing atomic.Bool
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	first := retryhttptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			w.Header().Set("Connection", "close")
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		arrived <- struct{}{}
		<-release
	}), retryhttptest.Pass())
	first.Listener.Close()
	first.Listener = lns[0]
	first.Start()
	defer first.Close()
	second := retryhttptest.NewUnstartedServer(nil, retryhttptest.Pass())
	second.Listener.Close()
	second.Listener = lns[1]
	second.Start()
	defer second.Close()

	dialing := &http.Transport{DialContext: (&base.Dialer{Resolver: addrs}).DialContext}
	defer dialing.CloseIdleConnections()
	url := "http://svc.test:" + port + "/"
	// Two requests at once leave two idle connections to the first address.
	var wg sync.WaitGroup
	failed := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			resp, err := dialing.RoundTrip(req)
			if err != nil {
				failed <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	for range 2 {
		select {
		case <-arrived:
		case err := <-failed:
			close(release)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(release)
	wg.Wait()
	require.Equal(t, 2, first.Connections())

	failing.Store(true)
	// The hook traces every attempt, the first included: the retry knows
	// the address that failed.
	rt := retryhttp.New(retryhttp.WithBase(dialing), retryhttp.WithBackoff(backoff.Constant(0)),
		retryhttp.WithOnGiveUp(func(retryhttp.GiveUpEvent) {}))
	code, attempts := roundTrip(t, rt, url)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 2, attempts, "the retry went to the second address")
	assert.Equal(t, 3, first.Attempts(), "attempts at the first address")
}

// TestRetryOverHTTP2RetiresTheConnection proves that over HTTP/2, where
// every request to a host shares one connection, the retry of a 5xx on a
// connection that never served marks it as not to be reused: the requests
// after it get a new connection, which they keep sharing.
func TestRetryOverHTTP2RetiresTheConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := retryhttptest.NewHTTP2Server(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	// The hook traces every attempt, the first included.
	rt := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)),
		retryhttp.WithOnGiveUp(func(retryhttp.GiveUpEvent) {}))
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor)
	assert.Equal(t, 2, retryhttp.Attempts(resp))
	assert.Equal(t, 1, srv.Connections(), "the retry rode the connection that failed")
	code, attempts := roundTrip(t, rt, srv.URL)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 1, attempts)
	assert.Equal(t, 2, srv.Connections(), "the next request got a new connection")
	for range 3 {
		roundTrip(t, rt, srv.URL)
	}
	assert.Equal(t, 2, srv.Connections(), "the requests after it shared it")
}

// unwrapping is a base over an *http.Transport that records the peer of
// each attempt, as read under the Transport, and unwraps to its transport.
type unwrapping struct {
	base  *http.Transport
	peers []netip.AddrPort
}

func (u *unwrapping) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := u.base.RoundTrip(r)
	u.peers = append(u.peers, base.Peer(r.Context()))
	return resp, err
}

func (u *unwrapping) Unwrap() http.RoundTripper { return u.base }

// TestPeerUnderAWrapper proves that a base which unwraps to an
// *http.Transport has its attempts traced, and reads each attempt's peer.
func TestPeerUnderAWrapper(t *testing.T) {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()
	u := &unwrapping{base: &http.Transport{}}
	defer u.base.CloseIdleConnections()
	var events []netip.AddrPort
	rt := retryhttp.New(retryhttp.WithBase(u), retryhttp.WithBackoff(backoff.Constant(0)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { events = append(events, e.Peer) }))
	code, _ := roundTrip(t, rt, srv.URL)
	require.Equal(t, http.StatusOK, code)
	want := netip.MustParseAddrPort(srv.Listener.Addr().String())
	assert.Equal(t, []netip.AddrPort{want, want}, u.peers, "peers read under the Transport")
	assert.Equal(t, []netip.AddrPort{want}, events)
	assert.False(t, base.Peer(context.Background()).IsValid())
}

// opaque hides its transport from the Transport, which then does not trace
// the attempts.
type opaque struct{ http.RoundTripper }

// BenchmarkPeerTrace compares a loopback GET through a Transport that
// traces each attempt's connection (its base is an *http.Transport) with
// one that does not (the same transport, hidden).
func BenchmarkPeerTrace(b *testing.B) {
	srv := retryhttptest.NewServer(nil, retryhttptest.Pass())
	defer srv.Close()
	for _, tc := range []struct {
		name string
		wrap func(*http.Transport) http.RoundTripper
	}{
		{"traced", func(t *http.Transport) http.RoundTripper { return t }},
		{"untraced", func(t *http.Transport) http.RoundTripper { return opaque{t} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			rt := retryhttp.New(retryhttp.WithBase(tc.wrap(base)))
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// TestGiveUpEventNamesThePeer proves that the address of the last
// attempt's connection reaches the give-up hook.
func TestGiveUpEventNamesThePeer(t *testing.T) {
	srv := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable))
	defer srv.Close()
	var peers []netip.AddrPort
	rt := retryhttp.New(retryhttp.WithMaxAttempts(1),
		retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) { peers = append(peers, e.Peer) }))
	defer rt.CloseIdleConnections()
	code, _ := roundTrip(t, rt, srv.URL)
	require.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}, peers)
}

// TestRetryOverHTTP2AfterAnErrorRetiresTheConnection proves that a retry
// after an attempt that failed with an error over HTTP/2 (a stream reset)
// marks its connection too.
func TestRetryOverHTTP2AfterAnErrorRetiresTheConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := retryhttptest.NewHTTP2Server(nil, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	var errs []error
	rt := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { errs = append(errs, e.Err) }))
	code, attempts := roundTrip(t, rt, srv.URL)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, errs, 1)
	require.Error(t, errs[0], "the first attempt failed with an error")
	assert.Equal(t, 2, attempts)
	code, _ = roundTrip(t, rt, srv.URL)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 2, srv.Connections(), "the next request got a new connection")
}

// oneBadOfFive returns a balancer, seeded with seed, over five backends of
// which one, bad, answers 503 to everything, and a function that closes
// them all (before the caller's leak check, which a t.Cleanup would run
// after).
func oneBadOfFive(seed uint64) (lb *retryhttptest.Balancer, bad *retryhttptest.Server, closeAll func()) {
	bad = retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable))
	servers := []*retryhttptest.Server{bad}
	backends := []string{bad.URL}
	for range 4 {
		s := retryhttptest.NewServer(nil, retryhttptest.Pass())
		servers = append(servers, s)
		backends = append(backends, s.URL)
	}
	lb = retryhttptest.NewBalancer(seed, backends...)
	return lb, bad, func() {
		lb.Close()
		for _, s := range servers {
			s.Close()
		}
	}
}
