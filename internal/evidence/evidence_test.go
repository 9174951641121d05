package evidence

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/attempt"
)

// addrConn is a net.Conn with the ends of a TCP connection and nothing
// else.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c addrConn) LocalAddr() net.Addr  { return c.local }
func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// traced returns the trace of an attempt to host over the HTTP/1
// connection from local port port to 10.0.0.1:80.
func traced(host string, port int) *Trace {
	req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
	p := &Trace{Context: req.Context(), req: req}
	p.conn = addrConn{
		local:  &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: port},
		remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80},
	}
	return p
}

// unavailable is a 503 with a body.
func unavailable() *http.Response {
	return &http.Response{StatusCode: http.StatusServiceUnavailable, ProtoMajor: 1, Body: io.NopCloser(strings.NewReader("unavailable"))}
}

// TestEvidenceConnection tables what makes a retry leave its connection,
// failure by failure over one HTTP/1 connection: each step is a success
// ("ok") or a 503 ("503"), and the retry after each 503 leaves (true) or
// stays (false).
func TestEvidenceConnection(t *testing.T) {
	tests := []struct {
		name   string
		warmed bool   // another connection's failure started the watch first
		steps  string // o: a success, f: a 503 that stays, L: a 503 that leaves
	}{
		{"a connection that fails before it served leaves", false, "L"},
		{"so does one in a watched host", true, "L"},
		{"a connection that served is trusted", false, "offfL"},
		{"so is one that served in a watched host", true, "offfL"},
		{"a success starts the count again", false, "offfofffL"},
		{"once left, every failure leaves", false, "LoL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(time.Now, true)
			if tt.warmed {
				e.Failed(traced("svc.test", 9), unavailable(), nil)
				e.Succeeded(traced("svc.test", 8)) // the host serves
			}
			p := traced("svc.test", 10)
			for i, step := range tt.steps {
				if step == 'o' {
					e.Succeeded(p)
					continue
				}
				leave := e.Failed(p, unavailable(), nil)
				assert.Equal(t, step == 'L', leave, "step %d (%c) of %s", i, step, tt.steps)
			}
		})
	}
}

// TestEvidenceOutage proves that a host whose connections all fail is
// down, not one of its instances: after HostLeaveLimit connections left in
// a row, retries stay, but for one connection left after every ProbeGap
// failures, however long the outage (the gap never grows); a success at
// the host ends it.
func TestEvidenceOutage(t *testing.T) {
	now := time.Unix(0, 0)
	e := New(func() time.Time { return now }, true)
	port := 1000
	next := func() *Trace { port++; return traced("svc.test", port) }
	for i := range HostLeaveLimit {
		require.True(t, e.Failed(next(), unavailable(), nil), "connection %d", i+1)
	}
	var lefts []int
	for i := 1; i <= ProbeGap*3; i++ {
		if e.Failed(next(), unavailable(), nil) {
			lefts = append(lefts, i)
		}
	}
	assert.Equal(t, []int{ProbeGap, 2 * ProbeGap, 3 * ProbeGap}, lefts, "failures after which a connection was left")

	e.Succeeded(next())
	assert.True(t, e.Failed(next(), unavailable(), nil), "after a success, a new connection that fails leaves")
}

// TestEvidenceOutageProbesInTime proves that a down host's ejection is
// bounded in time as well as in failures: a failure ProbeInterval or more
// after the last connection left leaves its connection, whatever the count
// since, so that a client whose requests are rare tries a new connection
// within ProbeInterval of the host healing.
func TestEvidenceOutageProbesInTime(t *testing.T) {
	now := time.Unix(0, 0)
	e := New(func() time.Time { return now }, true)
	port := 1000
	next := func() *Trace { port++; return traced("svc.test", port) }
	for range HostLeaveLimit {
		require.True(t, e.Failed(next(), unavailable(), nil))
	}
	now = now.Add(ProbeInterval - time.Millisecond)
	assert.False(t, e.Failed(next(), unavailable(), nil), "a failure within the interval stays")
	now = now.Add(time.Millisecond)
	assert.True(t, e.Failed(next(), unavailable(), nil), "the first failure once the interval passed leaves")
	now = now.Add(ProbeInterval / 2)
	assert.False(t, e.Failed(next(), unavailable(), nil), "the interval starts again from the last one left")
}

// TestEvidenceBurst proves that failures that come together between
// successes, as concurrent requests' do, do not make the host down: a
// success among its last downWindow outcomes says it serves.
func TestEvidenceBurst(t *testing.T) {
	e := New(time.Now, true)
	port := 3000
	next := func() *Trace { port++; return traced("svc.test", port) }
	e.Failed(next(), unavailable(), nil)
	e.Succeeded(next())
	for i := range downWindow - 1 {
		require.True(t, e.Failed(next(), unavailable(), nil), "failure %d after the success", i+1)
	}
	assert.False(t, e.Failed(next(), unavailable(), nil), "once the success is %d outcomes old", downWindow)
}

// TestEvidenceAnotherAddress proves that a host whose failing connections
// all went to one address is not down while a base.Dialer knows it
// another: a connection to the failing address is left, so that the retry
// dials another, until every address has failed.
func TestEvidenceAnotherAddress(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.4")}
	e := New(time.Now, true)
	port := 4000
	dialled := func(remote netip.Addr) *Trace {
		port++
		p := traced("svc.test", port)
		c := p.conn.(addrConn)
		c.remote = net.TCPAddrFromAddrPort(netip.AddrPortFrom(remote, 80))
		dc, _ := attempt.NewConn(c, nil, addrs)
		p.conn, p.dc = dc, dc.(*attempt.Conn)
		return p
	}
	for i := range HostLeaveLimit + 5 {
		require.True(t, e.Failed(dialled(addrs[0]), unavailable(), nil), "connection %d to the first address", i+1)
	}
	assert.True(t, e.Failed(dialled(addrs[1]), unavailable(), nil), "a connection to the second, while the third is left")
	assert.False(t, e.Failed(dialled(addrs[2]), unavailable(), nil), "every address failed: the host is down")
}

// TestEvidenceWholeConnection proves that a failure that ends the
// connection leaves it at once, without counting towards the host's
// outage: an error over HTTP/1, a response that closes.
func TestEvidenceWholeConnection(t *testing.T) {
	e := New(time.Now, true)
	port := 2000
	next := func() *Trace { port++; return traced("svc.test", port) }
	for range 2 * HostLeaveLimit {
		assert.True(t, e.Failed(next(), nil, syscall.ECONNRESET), "an error over HTTP/1")
		closing := unavailable()
		closing.Close = true
		assert.True(t, e.Failed(next(), closing, nil), "a response that closes")
	}
	p := traced("svc.test", 1)
	assert.True(t, e.Failed(p, unavailable(), nil), "the host is not down")
}

// TestEvidenceWithoutConnection proves that an attempt that got no
// connection leaves nothing, and records nothing.
func TestEvidenceWithoutConnection(t *testing.T) {
	e := New(time.Now, true)
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	p := &Trace{Context: req.Context(), req: req}
	assert.False(t, e.Failed(p, nil, errors.New("connection refused")))
	assert.Zero(t, e.live.Load())
	var none *Evidence
	assert.False(t, none.Failed(p, unavailable(), nil))
	none.Succeeded(p)
}

// TestEvidenceForgets proves that the table costs nothing once failures
// stop (a host's record goes after calmLimit successes) and holds at most
// maxEvidenceHosts hosts.
func TestEvidenceForgets(t *testing.T) {
	e := New(time.Now, true)
	p := traced("svc.test", 1)
	e.Failed(p, unavailable(), nil)
	require.EqualValues(t, 1, e.live.Load())
	for range calmLimit {
		e.Succeeded(p)
	}
	assert.Zero(t, e.live.Load(), "records after %d successes", calmLimit)

	for i := range maxEvidenceHosts + 10 {
		e.Failed(traced("h"+strconv.Itoa(i)+".test", 1), unavailable(), nil)
	}
	assert.EqualValues(t, maxEvidenceHosts, e.live.Load())
	assert.Len(t, e.hosts, maxEvidenceHosts)
	_, kept := e.hosts[traced("h0.test", 1).host()]
	assert.False(t, kept, "the host least recently used went first")
}

// TestEvidenceCrowdedHostsStay proves that past the bound on the hosts
// remembered, a forgotten host's retries err on the side of staying on
// their connections, never on dialling: a host recorded while the table is
// full leaves a connection that never served only after ConnFailLimit
// failures in a row, and the retry after an attempt not traced stays.
func TestEvidenceCrowdedHostsStay(t *testing.T) {
	e := New(time.Now, true)
	for i := range maxEvidenceHosts {
		e.Failed(traced("h"+strconv.Itoa(i)+".test", 1), unavailable(), nil)
	}
	p := traced("new.test", 1)
	for i := 1; i < ConnFailLimit; i++ {
		assert.False(t, e.Failed(p, unavailable(), nil), "failure %d of a crowded host", i)
	}
	assert.True(t, e.Failed(p, unavailable(), nil), "failure %d of a crowded host", ConnFailLimit)
	other, _ := http.NewRequest(http.MethodGet, "http://other.test/", nil)
	leave, _ := e.FailedUntraced(other, false)
	assert.False(t, leave, "an attempt not traced, at a crowded host")

	fresh := New(time.Now, true)
	assert.True(t, fresh.Failed(traced("svc.test", 1), unavailable(), nil), "a host with room leaves a connection that never served")
	leave, _ = fresh.FailedUntraced(other, false)
	assert.True(t, leave, "and so does an attempt not traced")
}

// TestEvidenceCrowdedHostLeavesAtTheLimit: a crowded host whose record
// starts with an attempt not traced, on the pooled connection that then
// fails traced, leaves it at the ConnFailLimit-th failure in a row, the
// untraced one counted: it stayed for one more.
func TestEvidenceCrowdedHostLeavesAtTheLimit(t *testing.T) {
	e := New(time.Now, true)
	for i := range maxEvidenceHosts + 76 {
		e.Failed(traced("h"+strconv.Itoa(i)+".test", 1), unavailable(), nil)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://new.test/", nil)
	leave, _ := e.FailedUntraced(req, false)
	require.False(t, leave, "failure 1, not traced, of a crowded host")
	p := traced("new.test", 1)
	p.reused = true
	for i := 2; i < ConnFailLimit; i++ {
		assert.False(t, e.Failed(p, unavailable(), nil), "failure %d of a crowded host", i)
	}
	assert.True(t, e.Failed(p, unavailable(), nil), "failure %d of a crowded host", ConnFailLimit)
}

// TestEvidenceTracesHostsWithARecord proves that the attempts of a host
// are traced exactly while it has a record: from its first failure, traced
// or not, until calmLimit successes in a row.
func TestEvidenceTracesHostsWithARecord(t *testing.T) {
	e := New(time.Now, true)
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	assert.False(t, e.Traces(req), "before any failure")
	e.FailedUntraced(req, false)
	assert.True(t, e.Traces(req), "after a failure")
	p := traced("svc.test", 1)
	for range calmLimit {
		e.Succeeded(p)
	}
	assert.False(t, e.Traces(req), "after %d successes", calmLimit)
	var none *Evidence
	assert.False(t, none.Traces(req))
}

// BenchmarkEvidence measures what a success costs while no host has a
// record (the steady state), and while its host has one.
func BenchmarkEvidence(b *testing.B) {
	b.Run("no record", func(b *testing.B) {
		e := New(time.Now, true)
		p := traced("svc.test", 1)
		b.ReportAllocs()
		for b.Loop() {
			e.Succeeded(p)
		}
	})
	b.Run("host recorded", func(b *testing.B) {
		e := New(time.Now, true)
		p := traced("svc.test", 1)
		e.Failed(traced("svc.test", 2), unavailable(), nil)
		e.mu.Lock()
		for _, h := range e.hosts {
			h.calm = -1 << 30 // never calm
		}
		e.mu.Unlock()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				e.Succeeded(p)
			}
		})
	})
}

func TestInstanceFailure(t *testing.T) {
	resp := func(code int) *http.Response { return &http.Response{StatusCode: code} }
	assert.True(t, InstanceFailure(resp(503), false, false))
	assert.False(t, InstanceFailure(resp(503), false, true), "a throttle keeps its connection")
	assert.False(t, InstanceFailure(resp(429), false, true))
	assert.True(t, InstanceFailure(resp(421), true, false), "misdirected always leaves")
	assert.False(t, InstanceFailure(nil, false, false), "an error is judged apart")
}

func TestLeaveWithoutEvidence(t *testing.T) {
	var e *Evidence // the base cannot be traced
	req, _ := http.NewRequest(http.MethodGet, "https://svc.test/", nil)
	leave, fresh := e.Leave(req, nil, &http.Response{StatusCode: 503}, nil, true, func() bool { return true })
	assert.True(t, leave, "a failure with no evidence to weigh leaves")
	assert.False(t, fresh)
	leave, _ = e.Leave(req, nil, &http.Response{StatusCode: 200}, nil, false, nil)
	assert.False(t, leave)
}
