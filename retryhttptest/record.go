package retryhttptest

import (
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"sync"
	"time"
)

// Request is the record of one logical request: every attempt that carried
// its key.
type Request struct {
	// Key identifies the logical request (see KeyHeader and KeyFunc).
	Key string
	// Attempts is how many attempts arrived.
	Attempts int
	// Executions is how many attempts ran the handler: those given Pass,
	// Truncate, Slow or ResetAfterRead. More than one means the side effect
	// happened more than once.
	Executions int
	// Arrivals holds each attempt's arrival time, in order.
	Arrivals []time.Time
	// Outcomes holds what each attempt got, in order: "pass", "503",
	// "429 Retry-After: 2", "reset", and so on.
	Outcomes []string
	// SameBody reports whether every attempt whose body was read whole
	// carried the same bytes. It is true while fewer than two were.
	SameBody bool
	// Overlapping is how many attempts arrived while another attempt of
	// the same request was still being served: hedges, where a retry
	// comes only after the attempt before it ended.
	Overlapping int
}

// An Option configures a Server or a Transport.
type Option func(*config)

type config struct {
	key func(*http.Request) string
}

func newConfig(opts []Option) config {
	c := config{key: func(r *http.Request) string { return keyOf(r, "Idempotency-Key") }}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// KeyHeader identifies a logical request by the named header, in place of
// Idempotency-Key: KeyHeader("X-Request-Id"). A request without the header
// is keyed by its method and target, so every such attempt at one URL counts
// as the same request.
func KeyHeader(name string) Option {
	if name == "" {
		panic("retryhttptest: KeyHeader: empty header name")
	}
	return func(c *config) { c.key = func(r *http.Request) string { return keyOf(r, name) } }
}

// KeyFunc identifies a logical request by fn's result. Where fn returns "",
// the request is keyed by its method and target.
func KeyFunc(fn func(*http.Request) string) Option {
	if fn == nil {
		panic("retryhttptest: KeyFunc: nil function")
	}
	return func(c *config) {
		c.key = func(r *http.Request) string {
			if k := fn(r); k != "" {
				return k
			}
			return keyOf(r, "")
		}
	}
}

// ledger records attempts. It is safe for concurrent use. Server and
// Transport embed it for its exported methods.
type ledger struct {
	mu          sync.Mutex
	byKey       map[string]*entry
	order       []*entry
	attempts    int
	executions  int
	connections int
	arrivals    []time.Time
}

type entry struct {
	Request
	serving  int // attempts being served
	numbered int // attempts given a number, some perhaps not yet recorded
	sum      [sha256.Size]byte
	summed   bool
}

// arrive records an attempt of the logical request key, which gets the
// action f gives it, and returns its entry and action. The attempt is
// numbered first and recorded once its action is known, so that a record
// never shows an attempt without its outcome; f is called without the lock
// held, since a Func may read the records.
func (l *ledger) arrive(key string, f Fault) (*entry, action) {
	l.mu.Lock()
	if l.byKey == nil {
		l.byKey = make(map[string]*entry)
	}
	e := l.byKey[key]
	if e == nil {
		e = &entry{Request: Request{Key: key, SameBody: true}}
		l.byKey[key] = e
	}
	e.numbered++
	n := e.numbered
	l.mu.Unlock()

	a := f.action(key, n)
	now := time.Now()

	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Attempts == 0 {
		l.order = append(l.order, e)
	}
	l.attempts++
	l.arrivals = append(l.arrivals, now)
	if e.serving > 0 {
		e.Overlapping++
	}
	e.serving++
	e.Attempts++
	e.Arrivals = append(e.Arrivals, now)
	e.Outcomes = append(e.Outcomes, a.String())
	return e, a
}

// leave records that an attempt of e is no longer being served.
func (l *ledger) leave(e *entry) {
	l.mu.Lock()
	e.serving--
	l.mu.Unlock()
}

func (l *ledger) executed(e *entry) {
	l.mu.Lock()
	l.executions++
	e.Executions++
	l.mu.Unlock()
}

// body records the digest of an attempt's whole body.
func (l *ledger) body(e *entry, b *bodyHash) {
	if !b.whole {
		return
	}
	var sum [sha256.Size]byte
	b.h.Sum(sum[:0])
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !e.summed:
		e.sum, e.summed = sum, true
	case e.sum != sum:
		e.SameBody = false
	}
}

func (l *ledger) connected() {
	l.mu.Lock()
	l.connections++
	l.mu.Unlock()
}

// Requests returns the record of every logical request so far, in order of
// first arrival.
func (l *ledger) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Request, len(l.order))
	for i, e := range l.order {
		out[i] = e.snapshot()
	}
	return out
}

// Request returns the record of the logical request key; a request that
// never arrived has zero Attempts.
func (l *ledger) Request(key string) Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.byKey[key]; e != nil {
		return e.snapshot()
	}
	return Request{Key: key, SameBody: true}
}

func (e *entry) snapshot() Request {
	r := e.Request
	r.Arrivals = append([]time.Time(nil), e.Arrivals...)
	r.Outcomes = append([]string(nil), e.Outcomes...)
	return r
}

// Attempts returns how many attempts have arrived.
func (l *ledger) Attempts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempts
}

// Executions returns how many attempts have run the handler.
func (l *ledger) Executions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.executions
}

// Arrivals returns the arrival time of every attempt, in order.
func (l *ledger) Arrivals() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.arrivals...)
}

func (l *ledger) connectionCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connections
}

// bodyHash digests a request body as it is read, without keeping it.
type bodyHash struct {
	r     io.ReadCloser
	h     hash.Hash
	whole bool // read to io.EOF
}

func newBodyHash(r io.ReadCloser) *bodyHash {
	if r == nil {
		r = http.NoBody
	}
	return &bodyHash{r: r, h: sha256.New()}
}

func (b *bodyHash) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF {
		b.whole = true
	}
	return n, err
}

func (b *bodyHash) Close() error { return b.r.Close() }

// drain reads the rest of the body, so that its digest covers all of it.
func (b *bodyHash) drain() {
	io.Copy(io.Discard, b)
}
