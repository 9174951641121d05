package retryhttptest

import (
	"errors"
	"net/http"
	"strconv"
)

// CloseAfter lets the handler answer, and streams its response as the
// handler writes it, but closes the connection once n bytes of the response
// body are sent, as a server that crashes mid-response or a proxy that
// gives up does. The client gets the headers, n bytes, and then an error:
// io.ErrUnexpectedEOF over HTTP/1.1 when the response has a Content-Length
// or is chunked. Over HTTP/2 the stream is reset instead (with
// INTERNAL_ERROR, the only code net/http's server lets a handler send), and
// the connection carries on with its other streams. A body of n bytes or
// fewer is sent whole.
//
// Unlike Truncate, nothing is buffered: a large body streams as it would
// without the fault, and a handler such as http.ServeContent answers range
// requests itself. It composes with the other faults as they do:
// Sequence(CloseAfter(1<<20)) cuts the first attempt of each request, and
// lets its retry (a range request, perhaps) through.
func CloseAfter(n int64) Fault { return streamed(bodyClose, n) }

// ResetAfter is CloseAfter with a reset (a TCP RST) in place of the close:
// the client reads at most n bytes of the response body and then fails
// with syscall.ECONNRESET ("connection reset by peer"). At most, since a
// reset discards what the client's system had received but the client not
// yet read, as it does with a real server. Over HTTP/2 it resets the stream,
// as CloseAfter does, and the client reads n bytes.
func ResetAfter(n int64) Fault { return streamed(bodyReset, n) }

// StallAfter lets the handler answer, streamed, but sends nothing more once
// n bytes of the response body are sent, and keeps the connection open, as
// a server or a path that hangs does: the client's read blocks until it
// gives up (a timeout, a cancelled context, a closed body) or the server
// closes. Over HTTP/2 only the stream stalls. A body of n bytes or fewer is
// sent whole.
func StallAfter(n int64) Fault { return streamed(bodyStall, n) }

func streamed(how bodyHow, n int64) Fault {
	return always(action{cut: -1, stream: bodyFault{how: how, after: max(n, 0)}})
}

// A bodyFault is what befalls a response body streamed from the handler
// once some of its bytes have been sent.
type bodyFault struct {
	how   bodyHow
	after int64 // body bytes sent first
}

type bodyHow uint8

const (
	bodyWhole bodyHow = iota // nothing: the body is sent whole
	bodyClose                // the connection is closed
	bodyReset                // the connection is reset
	bodyStall                // nothing more is sent, and the connection stays open
)

// String names the fault as the records show it: "close after 1024".
func (f bodyFault) String() string {
	name := [...]string{bodyWhole: "pass", bodyClose: "close", bodyReset: "reset", bodyStall: "stall"}[f.how]
	return name + " after " + strconv.FormatInt(f.after, 10)
}

// errCut is what a cut response writer returns to the handler once the
// fault has struck.
var errCut = errors.New("retryhttptest: response body cut by a fault")

// A cutWriter passes the handler's response on, and strikes its fault once
// the body has reached the fault's length. It has no ReadFrom, so that
// every byte goes through Write, where it is counted.
type cutWriter struct {
	w    http.ResponseWriter
	r    *http.Request
	f    bodyFault
	stop stop
	sent int64
	cut  bool // the fault struck: later writes fail
	// abort is set once the exchange must end with a reset stream, which
	// an HTTP/2 handler does by panicking when it returns (see finish).
	abort bool
}

// cutWriterFor returns the writer a handler answering r writes its
// response to: w itself when f leaves the body whole, and otherwise a
// cutWriter over w, returned again for its finish.
func cutWriterFor(w http.ResponseWriter, r *http.Request, f bodyFault, s stop) (http.ResponseWriter, *cutWriter) {
	if f.how == bodyWhole {
		return w, nil
	}
	c := &cutWriter{w: w, r: r, f: f, stop: s}
	return c, c
}

func (c *cutWriter) Header() http.Header { return c.w.Header() }

func (c *cutWriter) WriteHeader(code int) { c.w.WriteHeader(code) }

// Flush sends what was written so far, for a handler (a ReverseProxy) that
// flushes as it streams, until the fault strikes.
func (c *cutWriter) Flush() {
	if !c.cut {
		_ = http.NewResponseController(c.w).Flush()
	}
}

// Unwrap returns the server's writer, for http.ResponseController.
func (c *cutWriter) Unwrap() http.ResponseWriter { return c.w }

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, errCut
	}
	if room := c.f.after - c.sent; int64(len(p)) > room {
		n, err := c.w.Write(p[:room])
		c.sent += int64(n)
		c.cut = true
		if err == nil {
			c.strike()
			err = errCut
		}
		return n, err
	}
	n, err := c.w.Write(p)
	c.sent += int64(n)
	return n, err
}

// strike sends what was written and does what the fault says.
func (c *cutWriter) strike() {
	_ = http.NewResponseController(c.w).Flush()
	switch c.f.how {
	case bodyStall:
		select {
		case <-c.r.Context().Done():
			return // the client gave up: its connection is gone
		case <-c.stop.done:
		}
	}
	c.end(c.f.how == bodyReset)
}

// end ends the exchange: over HTTP/1 at once, by closing the connection
// (with a reset when reset is set); over HTTP/2 once the handler returns.
func (c *cutWriter) end(reset bool) {
	if c.r.ProtoMajor == 1 {
		if conn, _, err := http.NewResponseController(c.w).Hijack(); err == nil {
			if reset {
				linger0(conn)
			}
			conn.Close()
			return
		}
	}
	c.abort = true
}

// finish resets the HTTP/2 stream of a cut exchange, once the handler has
// returned. It may not return: net/http's ErrAbortHandler panic is how a
// handler resets its stream.
func (c *cutWriter) finish() {
	if c != nil && c.abort {
		panic(http.ErrAbortHandler)
	}
}
