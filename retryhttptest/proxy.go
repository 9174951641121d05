package retryhttptest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"
)

// A Proxy is a reverse proxy on loopback in front of a real server, the
// upstream: a local emulator, a staging service, any HTTP server. It gives
// each attempt the faults it was made with, as a Server does, and records
// the attempts the same way, so that a test can prove how a client set up
// against its real dependency retries. Its URL, Client and Config are those
// of the embedded httptest.Server; point the client under test at URL.
//
// An attempt that a fault answers in place of the upstream (Status,
// Respond, RetryAfter, RetryAfterDate, Hang, CloseBeforeRead) never reaches
// the upstream. Any other is forwarded as the client sent it (method,
// target, headers, Host included, since request signatures cover it, and
// body) through a Transport of the proxy's own, and counts as executed once
// the upstream has answered: ResetAfterRead lets the upstream answer, then
// resets the client's connection; Truncate and Slow cut or slow down the
// upstream's body. Pass returns the upstream's response as it came, body
// streamed. When the upstream cannot be reached the proxy answers 502 Bad
// Gateway, and the attempt is not executed.
//
// It is safe to read the records while the proxy runs.
type Proxy struct {
	*httptest.Server

	fault    Fault
	cfg      config
	ledger   // records, and the methods that read them
	stop     // ends hangs and pauses on Close
	proxy    *httputil.ReverseProxy
	upstream *http.Transport
}

// NewProxy starts and returns a proxy to upstream, the base URL of an HTTP
// or HTTPS server ("http://127.0.0.1:8000"; a path is prefixed to every
// request's), whose attempts get f. An invalid upstream panics, as setup
// failures do in net/http/httptest. An HTTPS upstream's certificate is
// verified against the system's roots.
func NewProxy(upstream string, f Fault, opts ...Option) *Proxy {
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		panic("retryhttptest: NewProxy: upstream must be an http or https URL with a host, got " + strconv.Quote(upstream))
	}
	p := &Proxy{fault: f, cfg: newConfig(opts), stop: newStop()}
	p.upstream = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     time.Minute,
		// The upstream's bytes go to the client as they came.
		DisableCompression: true,
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		Transport:     p.upstream,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if e, ok := resp.Request.Context().Value(entryKey{}).(*entry); ok {
				p.executed(e)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "retryhttptest: proxy: upstream: "+err.Error()+"\n")
		},
	}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			p.connected()
		}
	}
	p.Start()
	return p
}

// entryKey is the context key under which a forwarded attempt carries its
// record, for the proxy to mark it executed when the upstream answers.
type entryKey struct{}

// Close ends any hanging or paused attempts, shuts the proxy down, waits
// until every request has finished, and closes its idle connections to the
// upstream.
func (p *Proxy) Close() {
	p.stop.close()
	p.Server.Close()
	p.upstream.CloseIdleConnections()
}

// Connections returns how many connections clients have opened to the
// proxy.
func (p *Proxy) Connections() int { return p.connectionCount() }

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	e, a := p.arrive(p.cfg.key(r), p.fault)
	defer p.leave(e)
	if a.kind == closeEarly {
		abort(w, r, false)
		return
	}
	body := newBodyHash(r.Body)
	defer p.body(e, body)
	r.Body = body
	if p.answer(w, r, a, body) {
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), entryKey{}, e))
	switch a.kind {
	case reset:
		p.proxy.ServeHTTP(httptest.NewRecorder(), r)
		body.drain()
		abort(w, r, true)
	default:
		if a.cut < 0 && a.chunk == 0 {
			rw, cw := cutWriterFor(w, r, a.stream, p.stop)
			p.proxy.ServeHTTP(rw, r)
			cw.finish()
			return
		}
		rec := httptest.NewRecorder()
		p.proxy.ServeHTTP(rec, r)
		body.drain()
		p.replay(w, r, rec, a)
	}
}
