package retryhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/pacing"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// stubBase answers every request with a canned 200 and no body, as
// net/http's Transport returns the answer "HTTP/1.1 200 OK" with
// "Content-Length: 0" and a Date (a Body of http.NoBody, ContentLength 0),
// closing the request body as a real transport does. It allocates nothing
// itself.
type stubBase struct{ resp http.Response }

func (s *stubBase) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	// The Transport may wrap the body it returns: start each round trip
	// from the canned one, or the wrappers would pile up.
	if s.resp.Body != http.NoBody {
		s.resp.Body = http.NoBody
	}
	return &s.resp, nil
}

func newStub() *stubBase {
	return &stubBase{resp: http.Response{
		Status: "200 OK", StatusCode: http.StatusOK,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"Content-Length": {"0"},
			"Date":           {"Thu, 03 Dec 2026 09:00:00 GMT"},
		},
		Body: http.NoBody,
	}}
}

// tracedStub is a stub that unwraps to an *http.Transport, which it never
// uses: the Transport traces each attempt as it traces those of its default
// base, an *http.Transport, with pooled hooks (returnsLast), so that the
// cost of the trace is measured without a network. It uses the attempt's
// context as net/http's Transport (Go 1.26) does for a request sent on an
// idle connection it reuses over HTTP/1: it derives a context that it
// cancels once the answer is read, looks the trace up once, takes that
// context's Done channel (persistConn.roundTrip's), and calls the
// trace's hooks with what net/http gives them (StubHooks), so that what a
// guard or a trace does in them is measured too. net/http calls
// WroteHeaderField, WroteHeaders and WroteRequest from its connection's
// write loop and GotFirstResponseByte from its read loop; the stub calls
// them in that order on the goroutine of RoundTrip, as when the write is
// done before the answer is read.
type tracedStub struct{ *stubBase }

func (tracedStub) Unwrap() http.RoundTripper { return unusedTransport }

func (tracedStub) returnsLast() {}

func (s tracedStub) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context()) // Transport.roundTrip's
	_ = ctx.Done()                                      // persistConn.roundTrip's
	if trace := httptrace.ContextClientTrace(ctx); trace != nil {
		StubHooks(trace, r, stubConn{})
	}
	resp, err := s.stubBase.RoundTrip(r)
	cancel(errStubDone) // the read loop's, once the answer without a body is read
	return resp, err
}

var errStubDone = errors.New("stub: request done")

// StubHooks calls trace's hooks for r as net/http's Transport calls them
// for a request it sends on conn, an idle connection it reuses over
// HTTP/1, from GetConn to the first response byte. The external test
// package gives one of its own (stubhooks_test.go), so that a hook that
// reads from the stack which function called it stops a frame or two up,
// as it does under net/http, rather than walking the whole stack through
// this package's frames.
var StubHooks = func(trace *httptrace.ClientTrace, r *http.Request, conn net.Conn) {
	panic("retryhttp: StubHooks not set")
}

var unusedTransport = &http.Transport{}

// stubConn is the connection tracedStub reports: one to 127.0.0.1:80,
// never read or written.
type stubConn struct{ net.Conn }

var stubAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}

func (stubConn) RemoteAddr() net.Addr { return stubAddr }
func (stubConn) LocalAddr() net.Addr  { return stubAddr }
func (stubConn) Close() error         { return nil }

// BenchmarkOverhead compares requests of each shape through the bare stub
// and through a default Transport over the same stub, with hedging, and
// traced as a Transport over an *http.Transport traces each attempt; the
// -traced rows stand beside bare-traced, the stub alone using each request
// as net/http does (the context it derives is its own 3 allocations).
func BenchmarkOverhead(b *testing.B) {
	payload := bytes.Repeat([]byte("p"), 1024)
	// Each shape makes a request and a function that readies its body for
	// the next round trip.
	shapes := []struct {
		name string
		make func() (*http.Request, func())
	}{
		{"GET", func() (*http.Request, func()) {
			req, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
			return req, func() {}
		}},
		{"POST-GetBody-key", func() (*http.Request, func()) { return post(payload, true, "k-1") }},
		{"POST-GetBody", func() (*http.Request, func()) { return post(payload, true, "") }},
		{"POST-noGetBody", func() (*http.Request, func()) { return post(payload, false, "") }},
		{"POST-sharedGetBody-key", func() (*http.Request, func()) { return postShared(payload, "k-1") }},
	}
	for _, shape := range shapes {
		for _, tr := range []struct {
			name string
			rt   http.RoundTripper
		}{
			{"bare", newStub()},
			{"retryhttp", New(WithBase(newStub()))},
			{"retryhttp-hedging", New(WithBase(newStub()), WithHedging())},
			{"bare-traced", tracedStub{newStub()}}, // the baseline of the -traced rows
			{"retryhttp-traced", New(WithBase(tracedStub{newStub()}))},
			{"retryhttp-hedging-traced", New(WithBase(tracedStub{newStub()}), WithHedging())},
			{"retryhttp-pacing", New(WithBase(newStub()), WithPacing())},
			{"retryhttp-pacing-traced", New(WithBase(tracedStub{newStub()}), WithPacing())},
			{"retryhttp-pacing-quota-far", New(WithBase(quotaStub()), WithPacing())},
			{"retryhttp-pacing-another-paced", pacedElsewhere()},
			{"retryhttp-logger-error", New(WithBase(newStub()), WithLogger(errorLogger))},
			{"retryhttp-logger-error-traced", New(WithBase(tracedStub{newStub()}), WithLogger(errorLogger))},
			{"retryhttp-streams", New(WithBase(newStub()), WithStreams())},
		} {
			b.Run(shape.name+"/"+tr.name, func(b *testing.B) {
				req, reset := shape.make()
				b.ReportAllocs()
				for b.Loop() {
					reset()
					if _, err := tr.rt.RoundTrip(req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// errorLogger logs at ERROR only: nothing a request that succeeds writes.
var errorLogger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))

// quotaStub is a stub whose answers announce a quota far from spent, as
// GitHub's, OpenAI's and Anthropic's do on every answer.
func quotaStub() *stubBase {
	s := newStub()
	s.resp.Header = http.Header{"X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Remaining": {"4999"}, "X-Ratelimit-Reset": {"1767225600"}}
	return s
}

// pacedElsewhere returns a Transport with pacing over a stub, whose pacer
// paces another host than the one the benchmarks send to.
func pacedElsewhere() *Transport {
	tr := New(WithBase(newStub()), WithPacing())
	now := time.Now()
	tr.snd.Pacer.Observe(pacing.Key{Host: wire.MakeKey("http", "other.test")}, now, now, http.StatusTooManyRequests, nil)
	return tr
}

// post makes a POST of payload, with the GetBody that http.NewRequest
// gives a *bytes.Reader or without GetBody, and with an idempotency key
// unless key is empty.
func post(payload []byte, getBody bool, key string) (*http.Request, func()) {
	rd := bytes.NewReader(payload)
	req, _ := http.NewRequest(http.MethodPost, "http://svc.test/items", rd)
	if !getBody {
		req.GetBody = nil
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return req, func() { rd.Reset(payload) }
}

// postShared makes a POST of payload whose GetBody rewinds and returns the
// request's own stream, as the Azure SDK's does, with an idempotency key.
func postShared(payload []byte, key string) (*http.Request, func()) {
	stream := seekBody{bytes.NewReader(payload)}
	req, _ := http.NewRequest(http.MethodPost, "http://svc.test/items", stream)
	req.ContentLength = int64(len(payload))
	req.GetBody = func() (io.ReadCloser, error) {
		_, err := stream.Seek(0, io.SeekStart)
		return stream, err
	}
	req.Header.Set("Idempotency-Key", key)
	return req, func() { stream.Reset(payload) }
}

// BenchmarkOverheadParallel runs the bodiless GET from every CPU at once
// through one shared Transport: the budget's success path must not contend.
func BenchmarkOverheadParallel(b *testing.B) {
	tr := New(WithBase(newStub()))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
		for pb.Next() {
			if _, err := tr.RoundTrip(get); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSuccessPathAllocatesNothing pins the zero-allocation promise of the
// bodiless GET, so that a regression fails the tests and not only a
// benchmark nobody reads.
func TestSuccessPathAllocatesNothing(t *testing.T) {
	tr := New(WithBase(newStub()))
	get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := tr.RoundTrip(get); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("bodiless GET success path: got %v allocs/op, want 0", allocs)
	}
}

// BenchmarkKeylessPostLoopback measures the throughput of key-less POSTs of
// 1 KiB with GetBody, 32 at a time, against a loopback server, through a
// plain pooled transport and through a Transport over the same kind of
// transport: ns/op is the time per request across all 32 callers.
func BenchmarkKeylessPostLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	payload := bytes.Repeat([]byte("p"), 1024)
	plainAndRetryhttp(b, func(b *testing.B, rt http.RoundTripper) {
		b.ReportAllocs()
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(payload))
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	})
}

// plainAndRetryhttp runs bench as two sub-benchmarks: "plain", through a
// plain pooled transport as New's default base makes it, and "retryhttp",
// through a default Transport over the same kind of transport; each
// transport's idle connections are closed after.
func plainAndRetryhttp(b *testing.B, bench func(b *testing.B, rt http.RoundTripper)) {
	for _, tr := range []struct {
		name string
		make func() http.RoundTripper
	}{
		{"plain", func() http.RoundTripper { return defaultBase() }},
		{"retryhttp", func() http.RoundTripper { return New() }},
	} {
		b.Run(tr.name, func(b *testing.B) {
			rt := tr.make()
			defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			bench(b, rt)
		})
	}
}

// eventStub answers every request with a 200 event stream of one event,
// as an LLM API's shortest generation.
type eventStub struct{}

func (eventStub) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader("data: {\"choices\":[]}\n\ndata: [DONE]\n\n")), Request: r}, nil
}

// BenchmarkStream reads a whole event stream of two events through the
// bare stub, a default Transport, and one WithStreams, which holds it for
// its first event and passes on whole events.
func BenchmarkStream(b *testing.B) {
	for _, tr := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", eventStub{}},
		{"retryhttp", New(WithBase(eventStub{}))},
		{"retryhttp-streams", New(WithBase(eventStub{}), WithStreams())},
	} {
		b.Run(tr.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 512)
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, "http://svc.test/events", nil)
				resp, err := tr.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}
