package retryhttptest

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFaultString(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		want  string
		runs  bool // the handler runs
	}{
		{"zero", Fault{}, "pass", true},
		{"Pass", Pass(), "pass", true},
		{"Status", Status(503), "503", false},
		{"Respond", Respond(418, nil, "teapot"), "418", false},
		{"Respond with Retry-After", Respond(503, http.Header{"Retry-After": {"7"}}, ""), "503 Retry-After: 7", false},
		{"RetryAfter", RetryAfter(429, 2*time.Second), "429 Retry-After: 2", false},
		{"RetryAfterDate", RetryAfterDate(503, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), "503 Retry-After: Wed, 02 Jan 2030 03:04:05 GMT", false},
		{"Delay", Delay(time.Second, Pass()), "delay 1s, pass", true},
		{"Delay of Status", Delay(100*time.Millisecond, Status(502)), "delay 100ms, 502", false},
		{"nested Delay adds", Delay(time.Second, Delay(time.Second, Hang())), "delay 2s, hang", false},
		{"Hang", Hang(), "hang", false},
		{"ResetAfterRead", ResetAfterRead(), "reset", true},
		{"CloseBeforeRead", CloseBeforeRead(), "close", false},
		{"Truncate", Truncate(10), "truncate 10", true},
		{"Truncate negative", Truncate(-3), "truncate 0", true},
		{"Slow", Slow(4, 10*time.Millisecond), "slow 4/10ms", true},
		{"CloseAfter", CloseAfter(1024), "close after 1024", true},
		{"ResetAfter", ResetAfter(1 << 40), "reset after 1099511627776", true},
		{"StallAfter", StallAfter(0), "stall after 0", true},
		{"StallAfter negative", StallAfter(-1), "stall after 0", true},
		{"Delay of CloseAfter", Delay(time.Second, CloseAfter(5)), "delay 1s, close after 5", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n := 1; n <= 3; n++ {
				a := tt.fault.action("key", n)
				assert.Equal(t, tt.want, a.String(), "attempt %d", n)
				assert.Equal(t, tt.runs, a.executes(), "attempt %d executes", n)
			}
		})
	}
}

func TestZeroFaultIsPass(t *testing.T) {
	var zero Fault
	assert.Equal(t, Pass().action("k", 1), zero.action("k", 1))
	assert.Equal(t, action{kind: pass, cut: -1}, zero.action("k", 1))
}

func TestRespond(t *testing.T) {
	h := http.Header{"X-Custom": {"a"}}
	a := Respond(404, h, "gone").action("k", 1)
	h.Set("X-Custom", "changed")
	h.Set("X-Added", "b")

	assert.Equal(t, 404, a.status)
	assert.Equal(t, "gone", a.body)
	assert.Equal(t, "a", a.header.Get("X-Custom"), "Respond must copy the caller's header")
	assert.Empty(t, a.header.Get("X-Added"))
	assert.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"))

	a = Respond(200, http.Header{"Content-Type": {"application/json"}}, "{}").action("k", 1)
	assert.Equal(t, "application/json", a.header.Get("Content-Type"))

	a = Status(503).action("k", 1)
	assert.Equal(t, "Service Unavailable\n", a.body)
	assert.Empty(t, a.header.Get("Retry-After"))
}

func TestRetryAfterRoundsUp(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{-5 * time.Second, "0"},
		{time.Nanosecond, "1"},
		{time.Second, "1"},
		{1500 * time.Millisecond, "2"},
		{2 * time.Second, "2"},
		{2*time.Second + time.Millisecond, "3"},
		{time.Hour, "3600"},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			a := RetryAfter(503, tt.d).action("k", 1)
			assert.Equal(t, tt.want, a.header.Get("Retry-After"))
			assert.Equal(t, 503, a.status)
			assert.Equal(t, "Service Unavailable\n", a.body)
		})
	}
}

func TestRetryAfterDateIsUTC(t *testing.T) {
	at := time.Date(2030, 6, 1, 12, 30, 45, 0, time.FixedZone("UTC+3", 3*3600))
	a := RetryAfterDate(429, at).action("k", 1)
	got := a.header.Get("Retry-After")
	assert.Equal(t, "Sat, 01 Jun 2030 09:30:45 GMT", got)
	assert.Equal(t, at.UTC().Format(http.TimeFormat), got)
	parsed, err := http.ParseTime(got)
	require.NoError(t, err)
	assert.True(t, parsed.Equal(at), "got %v, want %v", parsed, at)
}

func TestSequenceAndFirst(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		want  []string // attempts 1, 2, ...
	}{
		{"Sequence", Sequence(Status(503), RetryAfter(429, time.Second), Hang()),
			[]string{"503", "429 Retry-After: 1", "hang", "pass", "pass"}},
		{"empty Sequence", Sequence(), []string{"pass", "pass"}},
		{"Sequence with Pass in the middle", Sequence(Status(500), Pass(), Status(502)),
			[]string{"500", "pass", "502", "pass"}},
		{"First", First(2, Status(503)), []string{"503", "503", "pass", "pass"}},
		{"First zero", First(0, Status(503)), []string{"pass", "pass"}},
		{"Delay of Sequence", Delay(time.Second, Sequence(Status(503))),
			[]string{"delay 1s, 503", "delay 1s, pass"}},
		{"Sequence of Delay", Sequence(Delay(time.Second, Status(503))),
			[]string{"delay 1s, 503", "pass"}},
		{"First of Sequence", First(3, Sequence(ResetAfterRead(), CloseBeforeRead())),
			[]string{"reset", "close", "pass", "pass"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, key := range []string{"a", "b"} {
				got := make([]string, len(tt.want))
				for i := range got {
					got[i] = tt.fault.action(key, i+1).String()
				}
				assert.Equal(t, tt.want, got, "key %q", key)
			}
		})
	}
}

func TestFunc(t *testing.T) {
	f := Func(func(key string, n int) Fault {
		switch {
		case key == "slow":
			return Delay(time.Second, Status(503))
		case n%2 == 1:
			return Status(500)
		}
		return Pass()
	})
	for key, want := range map[string][]string{
		"a":    {"500", "pass", "500", "pass"},
		"slow": {"delay 1s, 503", "delay 1s, 503", "delay 1s, 503", "delay 1s, 503"},
	} {
		got := make([]string, len(want))
		for i := range got {
			got[i] = f.action(key, i+1).String()
		}
		assert.Equal(t, want, got, "key %q", key)
	}
	// Inside a Sequence, fn sees the attempt number.
	assert.Equal(t, "500", Sequence(Pass(), Pass(), f).action("a", 3).String())
}

func TestChanceIsDeterministic(t *testing.T) {
	f := Chance(42, 0.5, Status(503))
	const keys, attempts = 200, 4
	outcome := func(k, n int) string { return f.action("key-"+strconv.Itoa(k), n).String() }

	forward := make(map[[2]int]string)
	for k := range keys {
		for n := 1; n <= attempts; n++ {
			forward[[2]int{k, n}] = outcome(k, n)
		}
	}
	// Ask again in the opposite order, interleaving other seeds' draws.
	other := Chance(7, 0.5, Status(503))
	differs := 0
	for k := keys - 1; k >= 0; k-- {
		for n := attempts; n >= 1; n-- {
			other.action("key-"+strconv.Itoa(k), n)
			require.Equal(t, forward[[2]int{k, n}], outcome(k, n), "key %d attempt %d", k, n)
			if other.action("key-"+strconv.Itoa(k), n).String() != forward[[2]int{k, n}] {
				differs++
			}
		}
	}
	assert.Positive(t, differs, "seed must change the draws")

	// A fresh Fault with the same seed draws the same.
	again := Chance(42, 0.5, Status(503))
	for k := range keys {
		for n := 1; n <= attempts; n++ {
			assert.Equal(t, forward[[2]int{k, n}], again.action("key-"+strconv.Itoa(k), n).String())
		}
	}
}

func TestChanceFraction(t *testing.T) {
	const keys = 10000
	for _, p := range []float64{0, 0.01, 0.1, 0.3, 0.5, 0.9, 1} {
		t.Run(strconv.FormatFloat(p, 'g', -1, 64), func(t *testing.T) {
			f := Chance(1, p, Status(503))
			for n := 1; n <= 3; n++ {
				hits := 0
				for k := range keys {
					switch s := f.action("request-"+strconv.Itoa(k), n).String(); s {
					case "503":
						hits++
					case "pass":
					default:
						t.Fatalf("unexpected action %q", s)
					}
				}
				got := float64(hits) / keys
				assert.InDelta(t, p, got, 0.02, "attempt %d: fraction %v, want %v", n, got, p)
			}
		})
	}
}

func TestSetupPanics(t *testing.T) {
	tests := []struct {
		name string
		fn   func()
	}{
		{"Respond 99", func() { Respond(99, nil, "") }},
		{"Respond 1000", func() { Respond(1000, nil, "") }},
		{"Respond 0", func() { Respond(0, nil, "") }},
		{"Status 99", func() { Status(99) }},
		{"RetryAfter 1000", func() { RetryAfter(1000, time.Second) }},
		{"Slow chunk 0", func() { Slow(0, time.Millisecond) }},
		{"Slow chunk negative", func() { Slow(-1, time.Millisecond) }},
		{"KeyHeader empty", func() { KeyHeader("") }},
		{"KeyFunc nil", func() { KeyFunc(nil) }},
		{"Func nil", func() { Func(nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Panics(t, tt.fn)
		})
	}
	assert.NotPanics(t, func() { Respond(100, nil, "") })
	assert.NotPanics(t, func() { Respond(999, nil, "") })
	assert.NotPanics(t, func() { Slow(1, 0) })
}
