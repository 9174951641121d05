package retryhttptest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A Fault decides what each attempt of a logical request gets: the handler's
// response, or a misbehaviour in its place. Faults are values: build them
// with the functions below and combine them with Delay, Sequence, First,
// Chance and Func. A Fault that is not a Sequence, First, Chance or Func
// applies to every attempt. The zero Fault is Pass.
//
// A Fault is immutable and safe for concurrent use.
type Fault struct {
	at func(key string, attempt int) action
}

// action is what one attempt gets.
type action struct {
	kind   kind
	delay  time.Duration // before anything else
	status int           // respond
	header http.Header   // respond
	body   string        // respond
	cut    int           // pass: body bytes sent before the connection is closed; -1 for all
	chunk  int           // pass: streamed in chunks of this many bytes, 0 for at once
	every  time.Duration // pass: pause between chunks
	stream bodyFault     // pass: what befalls the streamed body after some bytes
}

type kind uint8

const (
	pass       kind = iota // the handler answers
	respond                // a canned response; the handler does not run
	hang                   // nothing, until the client gives up
	reset                  // the handler runs, then the connection is reset
	closeEarly             // the connection is closed before the body is read
)

// executes reports whether the handler runs for the action.
func (a action) executes() bool { return a.kind == pass || a.kind == reset }

// String names the action as the records show it: "pass", "503",
// "429 Retry-After: 2", "hang", "reset", "close", "truncate 10",
// "slow 512/10ms", "close after 1024", "reset after 1024", "stall after
// 1024", each after "delay 100ms, " when delayed.
func (a action) String() string {
	var s string
	switch a.kind {
	case respond:
		s = strconv.Itoa(a.status)
		if ra := a.header.Get("Retry-After"); ra != "" {
			s += " Retry-After: " + ra
		}
	case hang:
		s = "hang"
	case reset:
		s = "reset"
	case closeEarly:
		s = "close"
	default:
		switch {
		case a.stream.how != bodyWhole:
			s = a.stream.String()
		case a.cut >= 0:
			s = "truncate " + strconv.Itoa(a.cut)
		case a.chunk > 0:
			s = fmt.Sprintf("slow %d/%v", a.chunk, a.every)
		default:
			s = "pass"
		}
	}
	if a.delay > 0 {
		s = "delay " + a.delay.String() + ", " + s
	}
	return s
}

func (f Fault) action(key string, attempt int) action {
	if f.at == nil {
		return action{cut: -1}
	}
	return f.at(key, attempt)
}

func always(a action) Fault {
	return Fault{at: func(string, int) action { return a }}
}

// Pass lets the handler answer. It is the zero Fault.
func Pass() Fault { return Fault{} }

// Status answers with the status code and its status text as the body; the
// handler does not run.
func Status(code int) Fault {
	return Respond(code, nil, http.StatusText(code)+"\n")
}

// Respond answers with the status code, header and body; the handler does
// not run. Respond panics if code is not a valid status code (100 to 999).
func Respond(code int, header http.Header, body string) Fault {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("retryhttptest: invalid status code %d", code))
	}
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	return always(action{kind: respond, status: code, header: h, body: body, cut: -1})
}

// RetryAfter answers with the status code and a Retry-After header of d in
// whole seconds, rounded up.
func RetryAfter(code int, d time.Duration) Fault {
	secs := int64(math.Ceil(d.Seconds()))
	return Respond(code, http.Header{"Retry-After": {strconv.FormatInt(max(secs, 0), 10)}}, http.StatusText(code)+"\n")
}

// RetryAfterDate answers with the status code and a Retry-After header
// holding the date t.
func RetryAfterDate(code int, t time.Time) Fault {
	return Respond(code, http.Header{"Retry-After": {t.UTC().Format(http.TimeFormat)}}, http.StatusText(code)+"\n")
}

// Delay waits d before doing what f says, as a slow server does before its
// response headers. The wait ends early if the client gives up. A Server
// reads the request body (its first MiB) before the wait, since that is
// when net/http notices a client that has gone.
func Delay(d time.Duration, f Fault) Fault {
	return Fault{at: func(key string, n int) action {
		a := f.action(key, n)
		a.delay += d
		return a
	}}
}

// Hang reads the request and never answers: the attempt ends when the
// client gives up (a timeout or a cancelled context) or the server closes.
func Hang() Fault { return always(action{kind: hang, cut: -1}) }

// ResetAfterRead reads the request and runs the handler, then resets the
// connection instead of sending the response: the side effect happened, and
// the client cannot know. Over HTTP/2 the stream is reset, not the
// connection.
func ResetAfterRead() Fault { return always(action{kind: reset, cut: -1}) }

// CloseBeforeRead closes the connection after the request's headers arrive
// and before its body is read; the handler does not run. Over HTTP/2 the
// stream is reset instead.
func CloseBeforeRead() Fault { return always(action{kind: closeEarly, cut: -1}) }

// Truncate lets the handler answer, but closes the connection after n bytes
// of the response body, although the Content-Length promises all of it. The
// client reads n bytes and then an error (io.ErrUnexpectedEOF over
// HTTP/1.1). The handler's response is buffered to know its length.
func Truncate(n int) Fault {
	return always(action{cut: max(n, 0)})
}

// Slow lets the handler answer, but streams its response body chunk bytes at
// a time with a pause of every before each chunk after the first, as a slow
// link does. The handler's response is buffered first. Slow panics if chunk
// is not positive.
func Slow(chunk int, every time.Duration) Fault {
	if chunk <= 0 {
		panic("retryhttptest: Slow: chunk must be positive")
	}
	return always(action{cut: -1, chunk: chunk, every: every})
}

// Sequence gives attempt n of each logical request faults[n-1], and Pass to
// attempts past the end: Sequence(Status(503), Status(503)) fails each
// request twice, then lets it succeed.
func Sequence(faults ...Fault) Fault {
	faults = append([]Fault(nil), faults...)
	return Fault{at: func(key string, n int) action {
		if n < 1 || n > len(faults) {
			return action{cut: -1}
		}
		return faults[n-1].action(key, n)
	}}
}

// First gives the first n attempts of each logical request f, and Pass to
// the rest: First(2, Status(503)) is Sequence(Status(503), Status(503)).
func First(n int, f Fault) Fault {
	return Fault{at: func(key string, attempt int) action {
		if attempt > n {
			return action{cut: -1}
		}
		return f.action(key, attempt)
	}}
}

// Chance gives f to a fraction p of attempts, and Pass to the rest. The draw
// is a function of seed, the logical request's key and the attempt number
// alone, so a run is reproducible however its requests interleave.
func Chance(seed uint64, p float64, f Fault) Fault {
	return Fault{at: func(key string, n int) action {
		if draw(seed, key, n) < p {
			return f.action(key, n)
		}
		return action{cut: -1}
	}}
}

// Func gives each attempt the Fault that fn returns for it, for faults that
// depend on more than the attempt number: the time, the load, a switch the
// test flips. fn is called once for each attempt, as it arrives, possibly
// from many goroutines at once.
func Func(fn func(key string, attempt int) Fault) Fault {
	if fn == nil {
		panic("retryhttptest: Func: nil function")
	}
	return Fault{at: func(key string, n int) action { return fn(key, n).action(key, n) }}
}

// draw returns a number in [0, 1) determined by its arguments: FNV-1a over
// the key, mixed with the seed and attempt by SplitMix64's finaliser.
func draw(seed uint64, key string, attempt int) float64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	x := seed ^ h ^ uint64(attempt)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// keyOf is the default key of a logical request: its Idempotency-Key, or
// else its method and target.
func keyOf(r *http.Request, header string) string {
	if k := r.Header.Get(header); k != "" {
		return k
	}
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	return strings.Join([]string{r.Method, target}, " ")
}
