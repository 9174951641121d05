package retryhttp_test

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
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
// HTTP/1 connection it reuses, answered 200 without a body: GetConn the
// address it dials, host:port (Transport.getConn, connectMethod.addr);
// GotConn the connection, reused, idle since it was put back
// (Transport.getConn); WroteHeaderField each field as Request.write writes
// it: Host, User-Agent (the caller's, or Go's default; none when set
// empty), Content-Length for a body of known length, the caller's other
// fields in sorted order, then the Accept-Encoding: gzip the Transport
// adds when the caller asked no encoding and no range; then WroteHeaders,
// WroteRequest without an error, GotFirstResponseByte, and PutIdleConn
// without an error (the read loop pools a connection whose answer has no
// body before RoundTrip returns).
func stubHooks(trace *httptrace.ClientTrace, r *http.Request, conn net.Conn) {
	if trace.GetConn != nil {
		trace.GetConn(canonicalAddr(r))
	}
	if trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: conn, Reused: true, WasIdle: true, IdleTime: time.Since(stubIdleSince)})
	}
	if trace.WroteHeaderField != nil {
		wroteHeaderFields(trace, r)
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
	if trace.PutIdleConn != nil {
		trace.PutIdleConn(nil)
	}
}

// wroteHeaderFields calls trace.WroteHeaderField for each field of r as
// Request.write and persistConn.roundTrip write them.
func wroteHeaderFields(trace *httptrace.ClientTrace, r *http.Request) {
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	trace.WroteHeaderField("Host", []string{host})
	ua := "Go-http-client/1.1"
	if _, ok := r.Header["User-Agent"]; ok {
		ua = r.Header.Get("User-Agent")
	}
	if ua != "" {
		trace.WroteHeaderField("User-Agent", []string{ua})
	}
	if r.ContentLength > 0 {
		trace.WroteHeaderField("Content-Length", []string{strconv.FormatInt(r.ContentLength, 10)})
	}
	keys := make([]string, 0, 16)
	for k := range r.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		trace.WroteHeaderField(k, r.Header[k])
	}
	if r.Header.Get("Accept-Encoding") == "" && r.Header.Get("Range") == "" && r.Method != http.MethodHead {
		trace.WroteHeaderField("Accept-Encoding", []string{"gzip"})
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
