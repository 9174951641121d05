package retryhttptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A Transport is an in-memory http.RoundTripper that serves each request
// with its handler, subject to its faults, and records the attempts as a
// Server does, with no sockets and no goroutines of its own. Its waits use
// time.Timer, so that inside a testing/synctest bubble they take no real
// time; real sockets cannot be used inside a bubble.
//
// A misbehaviour becomes what net/http would return for it: Hang blocks
// until the request's context is done and returns its error;
// ResetAfterRead returns an error wrapping syscall.ECONNRESET;
// CloseBeforeRead returns an error wrapping io.EOF; Truncate's body, and
// CloseAfter's, fail with io.ErrUnexpectedEOF; ResetAfter's body fails with
// an error wrapping syscall.ECONNRESET; StallAfter's body blocks until the
// request's context is done or the body is closed. Its bodies fail reads
// once closed, as net/http's do. The request's httptrace.ClientTrace, if any, has
// GetConn, GotConn, WroteHeaders and WroteRequest called, except that
// CloseBeforeRead calls only GetConn, GotConn and WroteHeaders: every
// attempt reaches the server.
//
// A Transport is safe for concurrent use, and its records may be read while
// it serves.
type Transport struct {
	fault   Fault
	handler http.Handler
	cfg     config
	ledger  // records, and the methods that read them
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport returns a Transport whose attempts get f, and whose handler
// h answers those that f lets through. A nil h answers 200 with the body
// "ok\n".
func NewTransport(h http.Handler, f Fault, opts ...Option) *Transport {
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "ok\n")
		})
	}
	return &Transport{fault: f, handler: h, cfg: newConfig(opts)}
}

// RoundTrip serves req in memory. It closes req's body.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(req.URL.Host)
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{})
	}
	e, a := t.arrive(t.cfg.key(req), t.fault)
	defer t.leave(e)
	if trace != nil && trace.WroteHeaders != nil {
		trace.WroteHeaders()
	}
	if a.kind == closeEarly {
		closeBody(req)
		return nil, fmt.Errorf("retryhttptest: server closed the connection before reading the request: %w", io.EOF)
	}
	body := newBodyHash(req.Body)
	defer func() {
		body.drain()
		body.Close()
		t.body(e, body)
	}()
	if a.kind != pass && a.kind != reset {
		body.drain()
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	if err := sleep(ctx, a.delay); err != nil {
		return nil, err
	}
	switch a.kind {
	case respond:
		return response(req, a.status, a.header, []byte(a.body)), nil
	case hang:
		<-ctx.Done()
		return nil, ctx.Err()
	}
	rec := httptest.NewRecorder()
	// The handler may close its body, as a server's handler may; the
	// caller's body is closed once, below.
	t.handler.ServeHTTP(rec, serverRequest(req, io.NopCloser(body)))
	t.executed(e)
	if a.kind == reset {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	resp := response(req, rec.Code, rec.Header(), rec.Body.Bytes())
	if a.cut >= 0 || a.chunk > 0 || a.stream.how != bodyWhole {
		resp.Body = &faultyBody{ctx: ctx, b: rec.Body.Bytes(), cut: a.cut, chunk: a.chunk, every: a.every,
			stream: a.stream, closed: make(chan struct{})}
	}
	return resp, nil
}

// serverRequest is req as a handler would see it.
func serverRequest(req *http.Request, body io.ReadCloser) *http.Request {
	r := req.Clone(req.Context())
	r.Body = body
	r.RequestURI = req.URL.RequestURI()
	u := *req.URL
	u.Scheme, u.Host, u.User = "", "", nil
	r.URL = &u
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	r.RemoteAddr = "192.0.2.1:1234"
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	return r
}

func response(req *http.Request, code int, header http.Header, body []byte) *http.Response {
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// sleep waits d or until ctx is done, and returns ctx's error if it is.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// faultyBody is a response body cut short after cut bytes (when cut >= 0),
// or streamed chunk bytes at a time with a pause of every between chunks,
// or struck by a stream fault once stream.after bytes were read. Like
// net/http's bodies, it fails reads once closed, and Close ends a read that
// blocks.
type faultyBody struct {
	ctx    context.Context
	b      []byte
	cut    int
	chunk  int
	every  time.Duration
	stream bodyFault
	sent   int

	closed    chan struct{}
	closeOnce sync.Once
}

// errBodyClosed is what a faultyBody's Read returns once it is closed, as
// net/http's bodies do.
var errBodyClosed = errors.New("retryhttptest: read on closed response body")

func (f *faultyBody) Read(p []byte) (int, error) {
	select {
	case <-f.closed:
		return 0, errBodyClosed
	default:
	}
	if f.cut >= 0 && f.sent >= f.cut && f.sent < len(f.b) {
		return 0, io.ErrUnexpectedEOF
	}
	if f.stream.how != bodyWhole && int64(f.sent) >= f.stream.after && f.sent < len(f.b) {
		return 0, f.strike()
	}
	if f.sent >= len(f.b) {
		return 0, io.EOF
	}
	end := len(f.b)
	if f.cut >= 0 {
		end = min(end, f.cut)
	}
	if f.stream.how != bodyWhole {
		end = int(min(int64(end), f.stream.after))
	}
	if f.chunk > 0 {
		if f.sent > 0 && f.sent%f.chunk == 0 {
			if err := sleep(f.ctx, f.every); err != nil {
				return 0, err
			}
		}
		end = min(end, (f.sent/f.chunk+1)*f.chunk)
	}
	n := copy(p, f.b[f.sent:end])
	f.sent += n
	return n, nil
}

// strike returns the error of a read at the point where the stream fault
// strikes, as net/http would report it, waiting first for a stall to end.
func (f *faultyBody) strike() error {
	switch f.stream.how {
	case bodyReset:
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case bodyStall:
		select {
		case <-f.ctx.Done():
			return f.ctx.Err()
		case <-f.closed:
			return errBodyClosed
		}
	}
	return io.ErrUnexpectedEOF
}

func (f *faultyBody) Close() error {
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}
