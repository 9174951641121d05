package retryhttp_test

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp"
)

func init() { retryhttp.StubHooks = stubHooks }

// stubIdleSince is when the stub's connection went idle.
var stubIdleSince = time.Now()

// stubHooks is retryhttp.StubHooks: a function outside the module's
// packages, as net/http's Transport.getConn is. It passes each hook what
// net/http's Transport (Go 1.26) passes it for a request sent on an idle
// HTTP/1 connection it reuses: GetConn the address it dials, host:port
// (Transport.getConn, connectMethod.addr); GotConn the connection, reused,
// idle since it was put back (Transport.getConn); WroteHeaderField each
// field it writes, Host and User-Agent first (Request.write); then
// WroteHeaders, WroteRequest without an error, and GotFirstResponseByte.
func stubHooks(trace *httptrace.ClientTrace, r *http.Request, conn net.Conn) {
	if trace.GetConn != nil {
		trace.GetConn(canonicalAddr(r))
	}
	if trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: conn, Reused: true, WasIdle: true, IdleTime: time.Since(stubIdleSince)})
	}
	if trace.WroteHeaderField != nil {
		host := r.Host
		if host == "" {
			host = r.URL.Host
		}
		trace.WroteHeaderField("Host", []string{host})
		if _, ok := r.Header["User-Agent"]; !ok {
			trace.WroteHeaderField("User-Agent", []string{"Go-http-client/1.1"})
		}
		for k, vs := range r.Header {
			trace.WroteHeaderField(k, vs)
		}
	}
	if trace.WroteHeaders != nil {
		trace.WroteHeaders()
	}
	if trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	if trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
}

// canonicalAddr returns r's host with its port, the scheme's when it has
// none, as net/http dials it. net/http has it made before it calls
// GetConn; the stub keeps each host's, so that making it is not counted as
// the cost of a trace.
func canonicalAddr(r *http.Request) string {
	if r.URL.Port() != "" {
		return r.URL.Host
	}
	if a, ok := addrs.Load(r.URL.Host); ok {
		return a.(string)
	}
	port := "80"
	if r.URL.Scheme == "https" {
		port = "443"
	}
	a := net.JoinHostPort(r.URL.Hostname(), port)
	addrs.Store(r.URL.Host, a)
	return a
}

var addrs sync.Map // host -> host:port
