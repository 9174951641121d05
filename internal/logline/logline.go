// Package logline writes the Transport's log lines through a *slog.Logger:
// one message per kind of line, and the attributes that describe an
// attempt without anything that may hold a secret (headers, user
// information, query strings, the URL a *url.Error repeats). It is given
// the facts of each line and the level to log it at; it decides nothing
// about what is worth logging or at which level, which the root does, and
// never builds a line its logger would drop.
package logline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// A Log writes lines to L; a nil L writes nothing.
type Log struct{ L *slog.Logger }

// An Attempt is what a line says of an attempt: its request, its number
// (1 for the first, 0 for none sent), and its outcome when it has one (a
// status that is not 0, an error, the connection's remote address).
type Attempt struct {
	Req    *http.Request
	N      int
	Status int
	Err    error
	Peer   netip.AddrPort
}

// Late is what a give-up for lack of time adds to its line: the wait the
// retry would have had, the time that would have been left once it was
// sent, and the host's typical answer time, which was more.
type Late struct {
	Delay, Left, Typical time.Duration
}

// Enabled reports whether the log writes lines at level for ctx.
func (l Log) Enabled(ctx context.Context, level slog.Level) bool {
	return l.L != nil && l.L.Enabled(ctx, level)
}

// Attempt logs the outcome of the attempt a at DEBUG.
func (l Log) Attempt(a Attempt) {
	if ctx := a.Req.Context(); l.Enabled(ctx, slog.LevelDebug) {
		l.L.LogAttrs(ctx, slog.LevelDebug, "retryhttp: attempt", a.attrs()...)
	}
}

// BaseResend logs at DEBUG a send that the base made again on its own.
func (l Log) BaseResend(a Attempt) {
	if ctx := a.Req.Context(); l.Enabled(ctx, slog.LevelDebug) {
		l.L.LogAttrs(ctx, slog.LevelDebug, "retryhttp: resent by the base", a.attrs()...)
	}
}

// Retry logs at DEBUG the retry of a about to be made after delay, with
// the time it will have left (0: no deadline), or, when resume, the
// resume of its response body, of which the caller had received offset
// bytes.
func (l Log) Retry(a Attempt, delay, left time.Duration, resume bool, offset int64) {
	ctx := a.Req.Context()
	if !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	msg := "retryhttp: retrying"
	attrs := append(a.attrs(), slog.Duration("delay", delay))
	if left != 0 {
		attrs = append(attrs, slog.Duration("time_left", max(left, 0)))
	}
	if resume {
		msg = "retryhttp: resuming response body"
		attrs = append(attrs, slog.Int64("offset", offset))
	}
	l.L.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
}

// GiveUp logs at level that a's failure is not retried, for reason, with
// late when it was for lack of time, and the offset of a response body's
// failure when resume.
func (l Log) GiveUp(level slog.Level, a Attempt, reason string, late *Late, resume bool, offset int64) {
	ctx := a.Req.Context()
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := append(a.attrs(), slog.String("reason", reason))
	if late != nil {
		attrs = append(attrs, slog.Duration("delay", late.Delay), slog.Duration("time_left", max(late.Left, 0)),
			slog.Duration("host_latency", late.Typical))
	}
	if resume {
		attrs = append(attrs, slog.Int64("offset", offset))
	}
	l.L.LogAttrs(ctx, level, "retryhttp: not retrying", attrs...)
}

// BodyFailure logs at level the error that ends a's response body, for
// reason, the caller having received offset bytes, after resumes.
func (l Log) BodyFailure(level slog.Level, a Attempt, reason string, offset int64, resumes int) {
	ctx := a.Req.Context()
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := append(a.attrs(), slog.String("reason", reason), slog.Int64("offset", offset), slog.Int("resumes", resumes))
	l.L.LogAttrs(ctx, level, "retryhttp: response body failed", attrs...)
}

// NotSent logs at DEBUG an attempt of req that is not sent, for reason,
// with the attributes given.
func (l Log) NotSent(req *http.Request, n int, msg, reason string, extra ...slog.Attr) {
	ctx := req.Context()
	if !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := append(Attempt{Req: req, N: n}.attrs(), slog.String("reason", reason))
	l.L.LogAttrs(ctx, slog.LevelDebug, msg, append(attrs, extra...)...)
}

// Inner logs at DEBUG that req, an attempt of another Transport's, is sent
// once, not retried.
func (l Log) Inner(req *http.Request, n int) {
	ctx := req.Context()
	if !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	l.L.LogAttrs(ctx, slog.LevelDebug, "retryhttp: sending once: an attempt of another retryhttp Transport",
		append(Attempt{Req: req, N: 1}.attrs(), slog.Int("outer_attempt", n))...)
}

// Retried logs at DEBUG that attempt n of req is not retried: another
// Transport under the base retried it already.
func (l Log) Retried(req *http.Request, n int) {
	ctx := req.Context()
	if !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	l.L.LogAttrs(ctx, slog.LevelDebug, "retryhttp: not retrying: another retryhttp Transport under the base retried it",
		Attempt{Req: req, N: n}.attrs()...)
}

// Hedge logs at DEBUG hedge n of req, sent after waited.
func (l Log) Hedge(req *http.Request, n int, waited time.Duration) {
	if ctx := req.Context(); l.Enabled(ctx, slog.LevelDebug) {
		l.L.LogAttrs(ctx, slog.LevelDebug, "retryhttp: hedging",
			append(Attempt{Req: req, N: n}.attrs(), slog.Duration("waited", waited))...)
	}
}

// Host logs at INFO msg about the host of scheme and host, with the
// attributes given.
func (l Log) Host(ctx context.Context, msg, scheme, host string, extra ...slog.Attr) {
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := []slog.Attr{slog.String("scheme", scheme), slog.String("host", host)}
	l.L.LogAttrs(ctx, slog.LevelInfo, msg, append(attrs, extra...)...)
}

// Panic logs at WARN msg, with r, a recovered panic.
func (l Log) Panic(msg string, r any) {
	if l.L == nil {
		return
	}
	l.L.LogAttrs(context.Background(), slog.LevelWarn, msg, slog.String("panic", fmt.Sprint(r)))
}

// attrs describes a for a line.
func (a Attempt) attrs() []slog.Attr {
	req := a.Req
	u := url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path}
	if u.Host == "" {
		u.Host = req.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("url", u.String()),
		slog.Int("attempt", a.N),
	}
	if a.Status != 0 {
		attrs = append(attrs, slog.Int("status", a.Status))
	}
	if a.Peer.IsValid() {
		attrs = append(attrs, slog.String("network.peer.address", a.Peer.Addr().String()), slog.Int("network.peer.port", int(a.Peer.Port())))
	}
	if err := a.Err; err != nil {
		// A *url.Error's message repeats the URL, query string included.
		var uerr *url.Error
		for errors.As(err, &uerr) {
			err = uerr.Err
		}
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	return attrs
}
