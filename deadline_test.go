package retryhttp

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
			assert.Equal(t, tt.grpc, string(GRPCTimeout.appendValue(nil, tt.d)))
			for _, f := range []DeadlineFormat{EnvoyTimeout, ConnectTimeout, MillisecondsHeader("X-Deadline-Ms")} {
				assert.Equal(t, tt.millis, string(f.appendValue(nil, tt.d)), f)
			}
		})
	}
}

// parseTests are the values each format reads, hostile ones included, and
// seed the fuzz corpus.
var parseTests = []struct {
	f     DeadlineFormat
	value string
	d     time.Duration
	kind  deadlineValue
}{
	{GRPCTimeout, "250m", 250 * time.Millisecond, deadlineSet},
	{GRPCTimeout, "1H", time.Hour, deadlineSet},
	{GRPCTimeout, "2M", 2 * time.Minute, deadlineSet},
	{GRPCTimeout, "3S", 3 * time.Second, deadlineSet},
	{GRPCTimeout, "4u", 4 * time.Microsecond, deadlineSet},
	{GRPCTimeout, "5n", 5, deadlineSet},
	{GRPCTimeout, "000000007m", 0, deadlineMalformed}, // 9 digits
	{GRPCTimeout, "0000007m", 7 * time.Millisecond, deadlineSet},
	{GRPCTimeout, "0n", 0, deadlineSet}, // gRPC's deadline already past
	{GRPCTimeout, "0m", 0, deadlineSet},
	{GRPCTimeout, "99999999H", maxDuration, deadlineSet}, // past a Duration: the longest
	{GRPCTimeout, "99999999S", 99999999 * time.Second, deadlineSet},
	{GRPCTimeout, "100000000n", 0, deadlineMalformed},
	{GRPCTimeout, "-5m", 0, deadlineMalformed},
	{GRPCTimeout, "+5m", 0, deadlineMalformed},
	{GRPCTimeout, "5", 0, deadlineMalformed}, // no unit
	{GRPCTimeout, "m", 0, deadlineMalformed}, // no value
	{GRPCTimeout, "5ms", 0, deadlineMalformed},
	{GRPCTimeout, "5s", 0, deadlineMalformed}, // units are case-sensitive: s is not S
	{GRPCTimeout, "5h", 0, deadlineMalformed},
	{GRPCTimeout, "1.5S", 0, deadlineMalformed},
	{GRPCTimeout, "5 m", 0, deadlineMalformed},
	{GRPCTimeout, " 5m\t", 5 * time.Millisecond, deadlineSet}, // spaces around a value are not part of it
	{GRPCTimeout, "5m,6m", 0, deadlineMalformed},
	{GRPCTimeout, "", 0, deadlineMalformed},
	{GRPCTimeout, "abc", 0, deadlineMalformed},
	{GRPCTimeout, "１m", 0, deadlineMalformed}, // a fullwidth digit
	{EnvoyTimeout, "250", 250 * time.Millisecond, deadlineSet},
	{EnvoyTimeout, "0", 0, deadlineNone}, // Envoy's 0: no timeout
	{EnvoyTimeout, "0000000000", 0, deadlineNone},
	{EnvoyTimeout, "9999999999", 9999999999 * time.Millisecond, deadlineSet},
	{EnvoyTimeout, "10000000000", 0, deadlineMalformed}, // 11 digits
	{EnvoyTimeout, "99999999999999999999999", 0, deadlineMalformed},
	{EnvoyTimeout, "-1", 0, deadlineMalformed},
	{EnvoyTimeout, "250ms", 0, deadlineMalformed},
	{EnvoyTimeout, "2.5", 0, deadlineMalformed},
	{EnvoyTimeout, "0x10", 0, deadlineMalformed},
	{EnvoyTimeout, "1e3", 0, deadlineMalformed},
	{EnvoyTimeout, "", 0, deadlineMalformed},
	{EnvoyTimeout, " ", 0, deadlineMalformed},
	{EnvoyTimeout, "\t42 ", 42 * time.Millisecond, deadlineSet},
	{ConnectTimeout, "250", 250 * time.Millisecond, deadlineSet},
	{ConnectTimeout, "0", 0, deadlineMalformed}, // Connect: a positive number
	{ConnectTimeout, "-250", 0, deadlineMalformed},
	{ConnectTimeout, "25 0", 0, deadlineMalformed},
	{ConnectTimeout, "250,100", 0, deadlineMalformed},
	{ConnectTimeout, "18446744073709551616", 0, deadlineMalformed},
	{"X-Deadline-Ms", "1", time.Millisecond, deadlineSet},
	{"X-Deadline-Ms", "0", 0, deadlineMalformed},
	{"X-Deadline-Ms", "NaN", 0, deadlineMalformed},
	{"X-Deadline-Ms", "Infinity", 0, deadlineMalformed},

	// Hostile values: past every bound, out of every format.
	{GRPCTimeout, "99999999n", 99999999, deadlineSet},
	{GRPCTimeout, "99999999M", 99999999 * time.Minute, deadlineSet},
	{GRPCTimeout, "2562048H", maxDuration, deadlineSet}, // the first hour past a Duration
	{GRPCTimeout, "2562047H", 2562047 * time.Hour, deadlineSet},
	{GRPCTimeout, "9223372036854775807n", 0, deadlineMalformed},
	{GRPCTimeout, "99999999999999999999H", 0, deadlineMalformed},
	{GRPCTimeout, "-9223372036854775808n", 0, deadlineMalformed},
	{GRPCTimeout, "00000000n", 0, deadlineSet},
	{GRPCTimeout, "0000000000n", 0, deadlineMalformed},
	{GRPCTimeout, " \t ", 0, deadlineMalformed},
	{GRPCTimeout, "mm", 0, deadlineMalformed},
	{GRPCTimeout, "1\xff", 0, deadlineMalformed},
	{GRPCTimeout, "\xff1m", 0, deadlineMalformed},
	{GRPCTimeout, "1m\x00", 0, deadlineMalformed},
	{GRPCTimeout, "1\u00b5", 0, deadlineMalformed}, // µ is not gRPC's u
	{GRPCTimeout, strings.Repeat("9", 400) + "S", 0, deadlineMalformed},
	{EnvoyTimeout, "9223372036854775807", 0, deadlineMalformed},
	{EnvoyTimeout, "18446744073709551616", 0, deadlineMalformed},
	{EnvoyTimeout, "-9223372036854775808", 0, deadlineMalformed},
	{EnvoyTimeout, strings.Repeat("0", 400), 0, deadlineMalformed},
	{EnvoyTimeout, "0000000001", time.Millisecond, deadlineSet},
	{EnvoyTimeout, "\xff", 0, deadlineMalformed},
	{ConnectTimeout, "9999999999", 9999999999 * time.Millisecond, deadlineSet},
	{ConnectTimeout, "99999999999", 0, deadlineMalformed},
	{ConnectTimeout, strings.Repeat("9", 400), 0, deadlineMalformed},
	{ConnectTimeout, "250m", 0, deadlineMalformed}, // gRPC's format is not Connect's
	{"X-Deadline-Ms", "\t1\t", time.Millisecond, deadlineSet},
	{"X-Deadline-Ms", "1,1", 0, deadlineMalformed},
}

func TestParseDeadline(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(fmt.Sprintf("%s=%q", tt.f, tt.value), func(t *testing.T) {
			d, kind := tt.f.parseValue(tt.value)
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
	got, kind := GRPCTimeout.parseValue(string(GRPCTimeout.appendValue(nil, d)))
	if assert.Equal(t, deadlineSet, kind, "%v in grpc-timeout", d) {
		assert.GreaterOrEqual(t, got, d, "grpc-timeout of %v", d)
		// Rounded up in the smallest unit that holds it in 8 digits: a
		// unit at most 1000 times one that does not.
		assert.Less(t, got-d, d/(grpcMaxValue/1000)+time.Nanosecond, "grpc-timeout of %v", d)
	}
	for _, f := range []DeadlineFormat{EnvoyTimeout, ConnectTimeout} {
		got, kind := f.parseValue(string(f.appendValue(nil, d)))
		if d/time.Millisecond > msMaxValue {
			// Sent as the most 10 digits say, which its reader accepts.
			assert.Equal(t, deadlineSet, kind, "%v in %s: more than 10 digits", d, f)
			assert.Equal(t, msMaxValue*time.Millisecond, got, "%v in %s", d, f)
			continue
		}
		if assert.Equal(t, deadlineSet, kind, "%v in %s", d, f) {
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
		if time.Duration(n) < minTimeLeft {
			return // never sent
		}
		checkRoundTrip(t, time.Duration(n))
	})
}

// FuzzParseDeadline checks parseValue, for gRPC's format and the
// millisecond ones, against the grammar written out with strconv: digits
// only, at most 8 of them and a unit for gRPC, at most 10 for
// milliseconds; the time they say, saturated; 0 as each format reads it;
// and a value that reads back from what appendValue writes for it.
func FuzzParseDeadline(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(string(tt.f), tt.value)
	}
	grpcUnit := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}
	f.Fuzz(func(t *testing.T, name, value string) {
		format := DeadlineFormat(name)
		d, kind := format.parseValue(value)

		s := strings.Trim(value, " \t")
		wantD, wantKind := time.Duration(0), deadlineMalformed
		if format == GRPCTimeout {
			if len(s) >= 2 && len(s) <= 9 && isDigits(s[:len(s)-1]) && grpcUnit[s[len(s)-1]] != 0 {
				n, _ := strconv.ParseInt(s[:len(s)-1], 10, 64)
				unit := grpcUnit[s[len(s)-1]]
				wantD, wantKind = maxDuration, deadlineSet
				if n <= int64(maxDuration/unit) {
					wantD = time.Duration(n) * unit
				}
			}
		} else if len(s) <= 10 && isDigits(s) {
			n, _ := strconv.ParseInt(s, 10, 64)
			switch {
			case n > 0:
				wantD, wantKind = time.Duration(n)*time.Millisecond, deadlineSet
			case format == EnvoyTimeout:
				wantKind = deadlineNone
			}
		}
		if d != wantD || kind != wantKind {
			t.Fatalf("%s %q: got (%v, %d), want (%v, %d)", name, value, d, kind, wantD, wantKind)
		}
		if kind == deadlineSet && d > 0 {
			if d2, kind2 := format.parseValue(string(format.appendValue(nil, d))); d2 != d || kind2 != deadlineSet {
				t.Fatalf("%s %q = %v, but %q reads as (%v, %d)", name, value, d, format.appendValue(nil, d), d2, kind2)
			}
		}
	})
}

func TestDeadlineFormatNames(t *testing.T) {
	assert.Equal(t, DeadlineFormat("X-Deadline-Ms"), MillisecondsHeader("x-deadline-ms"))
	assert.Equal(t, EnvoyTimeout, MillisecondsHeader("x-envoy-expected-rq-timeout-ms"))
	for _, bad := range []string{"", "bad header", "a:b", "grpc-timeout"} {
		assert.Panics(t, func() { MillisecondsHeader(bad) }, "%q", bad)
	}
	assert.Equal(t, []DeadlineFormat{GRPCTimeout, "X-Deadline-Ms"}, checkFormats("f", []DeadlineFormat{"grpc-timeout", "x-deadline-ms"}))
	assert.Panics(t, func() { checkFormats("f", nil) })
	assert.Panics(t, func() { checkFormats("f", []DeadlineFormat{"two words"}) })
}
