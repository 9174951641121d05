package scenario

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
)

// Handshakes counts the TLS handshakes servers completed.
type Handshakes struct {
	Full    int // a certificate sent and signed for
	Resumed int // a session resumed (tls.ConnectionState.DidResume)
}

// minus returns the handshakes of h beyond those of before.
func (h Handshakes) minus(before Handshakes) Handshakes {
	return Handshakes{Full: h.Full - before.Full, Resumed: h.Resumed - before.Resumed}
}

// A handshakeCounter counts the handshakes of the servers it watches, each
// connection once: at the first state net/http reports for it after its
// handshake (active, or idle for HTTP/2, before any request is handled),
// or, for a connection that never carried a request, when it closes. A
// handshake that did not complete is not counted. Once a server has
// closed (httptest.Server.Close waits for its hooks), every handshake it
// completed is counted.
type handshakeCounter struct {
	mu      sync.Mutex
	n       Handshakes
	counted map[net.Conn]bool
}

func newHandshakeCounter() *handshakeCounter {
	return &handshakeCounter{counted: make(map[net.Conn]bool)}
}

// watch makes srv's connection-state hook also count its handshakes; the
// hook it had still runs first.
func (h *handshakeCounter) watch(srv *http.Server) {
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		if prev != nil {
			prev(c, state)
		}
		h.see(c, state)
	}
}

func (h *handshakeCounter) see(c net.Conn, state http.ConnState) {
	tc, ok := c.(*tls.Conn)
	if !ok || state == http.StateNew {
		return // before the handshake
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	counted := h.counted[c]
	if state == http.StateClosed || state == http.StateHijacked {
		delete(h.counted, c)
	} else {
		h.counted[c] = true
	}
	if counted {
		return
	}
	// The hook runs on the connection's own goroutine, which has finished
	// the handshake or given up on it.
	switch cs := tc.ConnectionState(); {
	case !cs.HandshakeComplete:
	case cs.DidResume:
		h.n.Resumed++
	default:
		h.n.Full++
	}
}

// count returns the handshakes counted so far.
func (h *handshakeCounter) count() Handshakes {
	if h == nil {
		return Handshakes{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}
