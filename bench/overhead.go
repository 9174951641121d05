// Package bench compares retryhttp with go-retryablehttp, the AWS SDK for Go
// v2's retryer and failsafe-go: the per-request cost of each over the same
// in-memory stub (this package's benchmarks), and what each does to a
// server in trouble (the scenarios command, ./cmd/scenarios).
//
// It is a module of its own so that users of retryhttp never download the
// libraries it is compared with.
package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// A Stub answers every request with a canned 200 and an empty body, closing
// the request body as a real transport does. It allocates nothing itself.
// It serves one goroutine at a time.
type Stub struct{ resp http.Response }

// NewStub returns a Stub.
func NewStub() *Stub {
	return &Stub{resp: http.Response{
		Status: "200 OK", StatusCode: http.StatusOK,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody,
	}}
}

// RoundTrip returns the canned response.
func (s *Stub) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	// failsafe-go replaces the Body of the response it is given with a
	// wrapper: undo that, or the wrappers would nest from call to call.
	s.resp.Body = http.NoBody
	return &s.resp, nil
}

// A TracedStub is a Stub that unwraps to an *http.Transport, which it
// never uses: retryhttp takes such a base for one whose connections it can
// trace, as it takes its default base, so that the default base's path is
// measured without a network. It uses a request's context as net/http's
// Transport does (Go 1.26): it derives a context from it, waits on that
// one's Done channel, and cancels it once the answer is read.
type TracedStub struct{ *Stub }

// RoundTrip answers as the Stub does, using r's context as net/http does.
func (s TracedStub) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context()) // Transport.roundTrip's
	_ = ctx.Done()                                      // persistConn.roundTrip's
	resp, err := s.Stub.RoundTrip(r)
	cancel(errAnswered) // the read loop's, once an answer without a body is read
	return resp, err
}

var errAnswered = errors.New("bench: answer read")

// Unwrap returns an *http.Transport that is never used.
func (TracedStub) Unwrap() http.RoundTripper { return unusedTransport }

var unusedTransport = &http.Transport{}

// OverheadConfig is how every library is configured for the overhead
// benchmarks: 3 attempts and delays from 50 ms (never waited for, since
// every request succeeds), budgets as each library has them by default.
var OverheadConfig = peers.Config{Attempts: 3, Base: 50 * time.Millisecond, Cap: 20 * time.Second}

// An OverheadCase is one kind of request. Prepare returns a function that
// sends one such request through rt and checks that it succeeded; the
// request is made once, and reset between sends.
type OverheadCase struct {
	Name    string
	Prepare func(rt http.RoundTripper) func() error
}

// Run sends c's request b.N times through rt.
func (c OverheadCase) Run(b *testing.B, rt http.RoundTripper) {
	send := c.Prepare(rt)
	b.ReportAllocs()
	for b.Loop() {
		if err := send(); err != nil {
			b.Fatal(err)
		}
	}
}

// Payload is the request body of the POST cases.
var Payload = bytes.Repeat([]byte("p"), 1024)

// OverheadCases returns the requests the overhead benchmarks send: a
// bodiless GET, a POST of 1 KiB with GetBody (as http.NewRequest sets for a
// bytes.Reader), and the same POST without GetBody.
// The -new cases make their request anew for each send, as callers make
// them, so that a library's cost is set beside a request's own.
func OverheadCases() []OverheadCase {
	return []OverheadCase{
		{"GET", prepareGET},
		{"POST-GetBody", func(rt http.RoundTripper) func() error { return preparePOST(rt, true) }},
		{"POST-noGetBody", func(rt http.RoundTripper) func() error { return preparePOST(rt, false) }},
		{"GET-new", prepareNewGET},
		{"POST-GetBody-new", prepareNewPOST},
	}
}

func prepareNewGET(rt http.RoundTripper) func() error {
	return func() error {
		req, err := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
		if err != nil {
			return err
		}
		return roundTrip(rt, req)
	}
}

func prepareNewPOST(rt http.RoundTripper) func() error {
	return func() error {
		req, err := http.NewRequest(http.MethodPost, "http://svc.test/items", bytes.NewReader(Payload))
		if err != nil {
			return err
		}
		return roundTrip(rt, req)
	}
}

func prepareGET(rt http.RoundTripper) func() error {
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
	if err != nil {
		panic(err)
	}
	return func() error { return roundTrip(rt, req) }
}

func preparePOST(rt http.RoundTripper, getBody bool) func() error {
	rd := bytes.NewReader(Payload)
	req, err := http.NewRequest(http.MethodPost, "http://svc.test/items", rd)
	if err != nil {
		panic(err)
	}
	if !getBody {
		req.GetBody = nil
	}
	body := req.Body
	return func() error {
		rd.Reset(Payload)
		// go-retryablehttp and failsafe-go replace the caller's Body.
		req.Body = body
		return roundTrip(rt, req)
	}
}

var errStatus = errors.New("unexpected status")

func roundTrip(rt http.RoundTripper, req *http.Request) error {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errStatus
	}
	return nil
}

// BenchLoopback sends b.N bodiless GETs to a loopback server that answers
// 200 with an empty body, through lib over a fresh peers.NewBase transport.
func BenchLoopback(b *testing.B, lib peers.Library) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	base := peers.NewBase()
	defer base.CloseIdleConnections()
	GetLoop(b, lib.New(base, OverheadConfig), srv.URL+"/items")
}

// GetLoop sends b.N bodiless GETs of url through rt, reading each response
// whole, and fails b on any error or a status other than 200.
func GetLoop(b *testing.B, rt http.RoundTripper, url string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
