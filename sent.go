package retryhttp

import (
	"context"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
)

// A sendTrace learns, through net/http/httptrace, whether an attempt wrote
// its request headers: an attempt that failed before writing them cannot
// have reached the server's handler, whatever its method.
//
// The hooks fire on the transport's goroutines, hence the atomics. A hook
// may fire after the attempt's outcome has been decided (net/http writes
// requests on a goroutine of its own); on a pooled sendTrace reused by
// another request, such a late hook can only mark that request as written,
// which at worst forgoes a retry, never permits a wrong one.
type sendTrace struct {
	asked  atomic.Bool // GetConn fired: the base reports through httptrace
	wrote  atomic.Bool // WroteHeaders fired
	trace  httptrace.ClientTrace
	pooled bool
}

// sendTraces recycles sendTraces whose hooks were never composed with a
// caller's.
var sendTraces = sync.Pool{New: func() any { return newSendTrace() }}

func newSendTrace() *sendTrace {
	s := &sendTrace{}
	s.trace.GetConn = func(string) { s.asked.Store(true) }
	s.trace.WroteHeaders = func() { s.wrote.Store(true) }
	return s
}

// startSendTrace returns a fresh sendTrace for one attempt and ctx carrying
// it, composed with any trace the caller set, whose hooks still fire.
func startSendTrace(ctx context.Context) (*sendTrace, context.Context) {
	var s *sendTrace
	if httptrace.ContextClientTrace(ctx) != nil {
		// Composing rewrites the hooks to call the caller's too, so this
		// trace must not serve another request.
		s = newSendTrace()
	} else {
		s = sendTraces.Get().(*sendTrace)
		s.pooled = true
		s.asked.Store(false)
		s.wrote.Store(false)
	}
	return s, httptrace.WithClientTrace(ctx, &s.trace)
}

// provedUnsent reports whether the attempt's request headers were never
// written. Without evidence that the base reports through httptrace (a
// transport other than net/http's may not), it reports false.
func (s *sendTrace) provedUnsent() bool {
	return s != nil && s.asked.Load() && !s.wrote.Load()
}

// release returns s to the pool when it came from there.
func (s *sendTrace) release() {
	if s != nil && s.pooled {
		s.pooled = false
		sendTraces.Put(s)
	}
}

// refusedStream reports an HTTP/2 REFUSED_STREAM reset, by which the server
// promises that it did not process the request (RFC 9113, section 8.7).
// net/http's bundled HTTP/2 stream error type is unexported, so only its
// message tells the code.
func refusedStream(err error) bool {
	return strings.Contains(err.Error(), "REFUSED_STREAM")
}

// streamReset reports an HTTP/2 stream reset with INTERNAL_ERROR, which is
// how a server aborts a request it failed while handling: the HTTP/2 form of
// a connection reset. The message is matched for the reason given above.
func streamReset(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "stream error: ") && strings.Contains(msg, "INTERNAL_ERROR")
}
