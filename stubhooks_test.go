package retryhttp_test

import (
	"net"
	"net/http/httptrace"

	"github.com/retryhttp/retryhttp"
)

func init() { retryhttp.StubHooks = stubHooks }

// stubHooks is retryhttp.StubHooks: a function outside the module's
// packages, as net/http's Transport.getConn is.
func stubHooks(trace *httptrace.ClientTrace, hostPort string, conn net.Conn) {
	if trace.GetConn != nil {
		trace.GetConn(hostPort)
	}
	if trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: conn, Reused: true})
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
