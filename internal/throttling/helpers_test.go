package throttling

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/throttle"
)

// A host is what a request sent by a fixture meets: whether its n-th
// attempt (from 0) to host fails.
type host func(host string, n int) bool

// always fails every attempt, or none.
func always(fail bool) host { return func(string, int) bool { return fail } }

// failFirst fails a host's first n attempts, and none after.
func failFirst(n int) host { return func(_ string, i int) bool { return i < n } }

// switching fails while *failing is set.
func switching(failing *bool) host { return func(string, int) bool { return *failing } }

// A fixture drives a Throttler as a Transport of one attempt a request
// does: each request is admitted, then its one attempt ends in a success,
// which Record counts, or in a failure that the classifier would retry and
// that ends the request when its attempts run out, which GaveUp counts.
// Its clock is time.Now: a test runs it in a synctest bubble.
type fixture struct {
	th       *Throttler
	rand     float64 // what Env.Rand returns
	host     host
	attempts map[string]int // attempts sent, by host
	changes  []told         // the changes the requests found, in order
	panics   []any          // the values Env.StorePanicked was called with
}

func newFixture(rand float64, h host, opts ...throttle.Option) *fixture {
	f := &fixture{rand: rand, host: h, attempts: map[string]int{}}
	f.th = New(opts, Env{
		Now:           time.Now,
		Rand:          func() float64 { return f.rand },
		StorePanicked: func(r any) { f.panics = append(f.panics, r) },
	})
	return f
}

// get sends a GET of url, of one attempt, and reports whether it was
// refused.
func (f *fixture) get(url string) (refused bool) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		panic(err)
	}
	h, _, ok, c := f.th.Admit(req)
	f.note(c)
	if !ok {
		return true
	}
	n := f.attempts[req.URL.Host]
	f.attempts[req.URL.Host]++
	if !f.host(req.URL.Host, n) {
		f.note(f.th.Record(h, req, nil, classify.Verdict{Decision: classify.DontRetry}, 1))
		return false
	}
	f.note(f.th.Record(h, req, nil, classify.Verdict{Decision: classify.Retry}, 1))
	f.note(f.th.GaveUp(req, 1, false, nil))
	return false
}

// told is a Change as the Transport logs it.
type told struct {
	kind        Kind
	host        wire.HostKey
	probability float64
}

func (f *fixture) note(c Change) {
	if c.Kind != Same {
		f.changes = append(f.changes, told{c.Kind, c.Host(), c.Probability})
	}
}

// gets sends n GETs of url and returns how many were refused.
func (f *fixture) gets(url string, n int) (refused int) {
	for range n {
		if f.get(url) {
			refused++
		}
	}
	return refused
}

// rejection returns the probability Rejections reports for the host
// named host over http, and whether the host is counted at all.
func (f *fixture) rejection(name string) (float64, bool) {
	for r := range f.th.Rejections() {
		if r.Host == name {
			return r.Probability, true
		}
	}
	return 0, false
}

// lookup returns the counts of the host named host over http, or nil.
func (th *Throttler) lookup(name string) *Host {
	return th.hosts.Load().lookup("http", name, th.hash("http", name))
}
