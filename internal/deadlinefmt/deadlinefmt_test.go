package deadlinefmt

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const maxDuration = time.Duration(math.MaxInt64)

// The formats of deadline's constants, and a header of one's own.
const (
	grpc    = GRPC
	envoy   = Envoy
	connect = "Connect-Timeout-Ms"
	ownMs   = "X-Deadline-Ms"
)

var formatTests = []struct {
	d            time.Duration
	grpc, millis string
}{
	{time.Millisecond, "1m", "1"},
	{1999 * time.Microsecond, "1999u", "1"},
	{1500 * time.Microsecond, "1500u", "1"},
	{250 * time.Millisecond, "250m", "250"},
	{299123456 * time.Nanosecond, "299124u", "299"}, // 9 digits of ns: rounded up to µs
	{99999999 * time.Nanosecond, "99999999n", "99"},
	{100 * time.Millisecond, "100m", "100"},
	{time.Second, "1S", "1000"},
	{90 * time.Second, "90S", "90000"},
	{2 * time.Minute, "2M", "120000"},
	{time.Hour, "1H", "3600000"},
	{100*time.Second + time.Nanosecond, "100001m", "100000"},      // 9 digits of µs: ms, rounded up
	{9_999_999_999 * time.Millisecond, "10000000S", "9999999999"}, // 10 digits: the most sent
	{200 * 24 * time.Hour, "4800H", "9999999999"},                 // 11 digits of ms: 10 sent
	{maxDuration, "2562048H", "9999999999"},
}

func TestAppendDeadline(t *testing.T) {
	for _, tt := range formatTests {
		t.Run(tt.d.String(), func(t *testing.T) {
			assert.Equal(t, tt.grpc, string(Append(nil, grpc, tt.d)))
			for _, f := range []string{envoy, connect, ownMs} {
				assert.Equal(t, tt.millis, string(Append(nil, f, tt.d)), f)
			}
		})
	}
}

// parseTests are the values each format reads, hostile ones included, and
// seed the fuzz corpus.
var parseTests = []struct {
	f     string
	value string
	d     time.Duration
	kind  Kind
}{
	{grpc, "250m", 250 * time.Millisecond, Set},
	{grpc, "1H", time.Hour, Set},
	{grpc, "2M", 2 * time.Minute, Set},
	{grpc, "3S", 3 * time.Second, Set},
	{grpc, "4u", 4 * time.Microsecond, Set},
	{grpc, "5n", 5, Set},
	{grpc, "000000007m", 0, Malformed}, // 9 digits
	{grpc, "0000007m", 7 * time.Millisecond, Set},
	{grpc, "0n", 0, Set}, // gRPC's deadline already past
	{grpc, "0m", 0, Set},
	{grpc, "99999999H", maxDuration, Set}, // past a Duration: the longest
	{grpc, "99999999S", 99999999 * time.Second, Set},
	{grpc, "100000000n", 0, Malformed},
	{grpc, "-5m", 0, Malformed},
	{grpc, "+5m", 0, Malformed},
	{grpc, "5", 0, Malformed}, // no unit
	{grpc, "m", 0, Malformed}, // no value
	{grpc, "5ms", 0, Malformed},
	{grpc, "5s", 0, Malformed}, // units are case-sensitive: s is not S
	{grpc, "5h", 0, Malformed},
	{grpc, "1.5S", 0, Malformed},
	{grpc, "5 m", 0, Malformed},
	{grpc, " 5m\t", 5 * time.Millisecond, Set}, // spaces around a value are not part of it
	{grpc, "5m,6m", 0, Malformed},
	{grpc, "", 0, Malformed},
	{grpc, "abc", 0, Malformed},
	{grpc, "１m", 0, Malformed}, // a fullwidth digit
	{envoy, "250", 250 * time.Millisecond, Set},
	{envoy, "0", 0, None}, // Envoy's 0: no timeout
	{envoy, "0000000000", 0, None},
	{envoy, "9999999999", 9999999999 * time.Millisecond, Set},
	{envoy, "10000000000", 0, Malformed}, // 11 digits
	{envoy, "99999999999999999999999", 0, Malformed},
	{envoy, "-1", 0, Malformed},
	{envoy, "250ms", 0, Malformed},
	{envoy, "2.5", 0, Malformed},
	{envoy, "0x10", 0, Malformed},
	{envoy, "1e3", 0, Malformed},
	{envoy, "", 0, Malformed},
	{envoy, " ", 0, Malformed},
	{envoy, "\t42 ", 42 * time.Millisecond, Set},
	{connect, "250", 250 * time.Millisecond, Set},
	{connect, "0", 0, Malformed}, // Connect: a positive number
	{connect, "-250", 0, Malformed},
	{connect, "25 0", 0, Malformed},
	{connect, "250,100", 0, Malformed},
	{connect, "18446744073709551616", 0, Malformed},
	{ownMs, "1", time.Millisecond, Set},
	{ownMs, "0", 0, Malformed},
	{ownMs, "NaN", 0, Malformed},
	{ownMs, "Infinity", 0, Malformed},

	// Hostile values: past every bound, out of every format.
	{grpc, "99999999n", 99999999, Set},
	{grpc, "99999999M", 99999999 * time.Minute, Set},
	{grpc, "2562048H", maxDuration, Set}, // the first hour past a Duration
	{grpc, "2562047H", 2562047 * time.Hour, Set},
	{grpc, "9223372036854775807n", 0, Malformed},
	{grpc, "99999999999999999999H", 0, Malformed},
	{grpc, "-9223372036854775808n", 0, Malformed},
	{grpc, "00000000n", 0, Set},
	{grpc, "0000000000n", 0, Malformed},
	{grpc, " \t ", 0, Malformed},
	{grpc, "mm", 0, Malformed},
	{grpc, "1\xff", 0, Malformed},
	{grpc, "\xff1m", 0, Malformed},
	{grpc, "1m\x00", 0, Malformed},
	{grpc, "1\u00b5", 0, Malformed}, // µ is not gRPC's u
	{grpc, strings.Repeat("9", 400) + "S", 0, Malformed},
	{envoy, "9223372036854775807", 0, Malformed},
	{envoy, "18446744073709551616", 0, Malformed},
	{envoy, "-9223372036854775808", 0, Malformed},
	{envoy, strings.Repeat("0", 400), 0, Malformed},
	{envoy, "0000000001", time.Millisecond, Set},
	{envoy, "\xff", 0, Malformed},
	{connect, "9999999999", 9999999999 * time.Millisecond, Set},
	{connect, "99999999999", 0, Malformed},
	{connect, strings.Repeat("9", 400), 0, Malformed},
	{connect, "250m", 0, Malformed}, // gRPC's format is not Connect's
	{ownMs, "\t1\t", time.Millisecond, Set},
	{ownMs, "1,1", 0, Malformed},
}

func TestParseDeadline(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(fmt.Sprintf("%s=%q", tt.f, tt.value), func(t *testing.T) {
			d, kind := Parse(tt.f, tt.value)
			assert.Equal(t, tt.kind, kind, "kind")
			assert.Equal(t, tt.d, d, "time left")
		})
	}
}

// TestDeadlineRoundTrip reads back what is sent: gRPC's value, rounded up,
// never says less than the time left nor more than one unit above it; a
// millisecond value, rounded down, never says more, nor a millisecond less.
func TestDeadlineRoundTrip(t *testing.T) {
	for _, tt := range formatTests {
		checkRoundTrip(t, tt.d)
	}
}

func checkRoundTrip(t *testing.T, d time.Duration) {
	t.Helper()
	got, kind := Parse(grpc, string(Append(nil, grpc, d)))
	if assert.Equal(t, Set, kind, "%v in grpc-timeout", d) {
		assert.GreaterOrEqual(t, got, d, "grpc-timeout of %v", d)
		// Rounded up in the smallest unit that holds it in 8 digits: a
		// unit at most 1000 times one that does not.
		assert.Less(t, got-d, d/(grpcMaxValue/1000)+time.Nanosecond, "grpc-timeout of %v", d)
	}
	for _, f := range []string{envoy, connect} {
		got, kind := Parse(f, string(Append(nil, f, d)))
		if d/time.Millisecond > msMaxValue {
			// Sent as the most 10 digits say, which its reader accepts.
			assert.Equal(t, Set, kind, "%v in %s: more than 10 digits", d, f)
			assert.Equal(t, msMaxValue*time.Millisecond, got, "%v in %s", d, f)
			continue
		}
		if assert.Equal(t, Set, kind, "%v in %s", d, f) {
			assert.LessOrEqual(t, got, d, "%s of %v", f, d)
			assert.Less(t, d-got, time.Millisecond, "%s of %v", f, d)
		}
	}
}

func FuzzDeadlineRoundTrip(f *testing.F) {
	for _, tt := range formatTests {
		f.Add(int64(tt.d))
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if time.Duration(n) < time.Millisecond {
			return // never sent: the Transport's least time left
		}
		checkRoundTrip(t, time.Duration(n))
	})
}

// FuzzParseDeadline checks Parse, for gRPC's format and the
// millisecond ones, against the grammar written out with strconv: digits
// only, at most 8 of them and a unit for gRPC, at most 10 for
// milliseconds; the time they say, saturated; 0 as each format reads it;
// and a value that reads back from what Append writes for it.
func FuzzParseDeadline(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(string(tt.f), tt.value)
	}
	grpcUnit := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}
	f.Fuzz(func(t *testing.T, name, value string) {
		format := name
		d, kind := Parse(format, value)

		s := strings.Trim(value, " \t")
		wantD, wantKind := time.Duration(0), Malformed
		if format == grpc {
			if len(s) >= 2 && len(s) <= 9 && isDigits(s[:len(s)-1]) && grpcUnit[s[len(s)-1]] != 0 {
				n, _ := strconv.ParseInt(s[:len(s)-1], 10, 64)
				unit := grpcUnit[s[len(s)-1]]
				wantD, wantKind = maxDuration, Set
				if n <= int64(maxDuration/unit) {
					wantD = time.Duration(n) * unit
				}
			}
		} else if len(s) <= 10 && isDigits(s) {
			n, _ := strconv.ParseInt(s, 10, 64)
			switch {
			case n > 0:
				wantD, wantKind = time.Duration(n)*time.Millisecond, Set
			case format == envoy:
				wantKind = None
			}
		}
		if d != wantD || kind != wantKind {
			t.Fatalf("%s %q: got (%v, %d), want (%v, %d)", name, value, d, kind, wantD, wantKind)
		}
		if kind == Set && d > 0 {
			if d2, kind2 := Parse(format, string(Append(nil, format, d))); d2 != d || kind2 != Set {
				t.Fatalf("%s %q = %v, but %q reads as (%v, %d)", name, value, d, Append(nil, format, d), d2, kind2)
			}
		}
	})
}

func TestCheck(t *testing.T) {
	type format string
	assert.Equal(t, []format{grpc, ownMs}, Check("f", []format{"grpc-timeout", "x-deadline-ms"}))
	assert.PanicsWithValue(t, "f: no deadline.Format", func() { Check[format]("f", nil) })
	assert.PanicsWithValue(t, `f: invalid header name "two words"`, func() { Check("f", []format{"two words"}) })
	assert.Panics(t, func() { Check("f", []format{""}) })
}

func TestSent(t *testing.T) {
	d, ok := Sent(context.Background())
	assert.False(t, ok)
	assert.Zero(t, d)
	ctx := context.WithValue(WithSent(context.Background(), time.Second), sentKey{}, "other")
	_, ok = Sent(ctx)
	assert.False(t, ok, "a value of another type under the key")
	type otherKey struct{}
	d, ok = Sent(context.WithValue(WithSent(context.Background(), time.Second), otherKey{}, 1))
	assert.True(t, ok)
	assert.Equal(t, time.Second, d)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
