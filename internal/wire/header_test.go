package wire

import (
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// digitsTests is shared by TestDigits and the seed corpus of FuzzDigits.
var digitsTests = []struct {
	in string
	n  int64
	ok bool
}{
	{"0", 0, true},
	{"000", 0, true},
	{"7", 7, true},
	{"0042", 42, true},
	{"9223372036854775806", math.MaxInt64 - 1, true},
	{"9223372036854775807", math.MaxInt64, true},
	{"9223372036854775808", math.MaxInt64, true}, // saturated
	{"18446744073709551616", math.MaxInt64, true},
	{"99999999999999999999", math.MaxInt64, true},
	{strings.Repeat("9", 400), math.MaxInt64, true},
	{strings.Repeat("0", 400) + "1", 1, true},
	{"", 0, false},
	{" ", 0, false},
	{" 1", 0, false}, // spaces are the caller's to trim
	{"1\t", 0, false},
	{"-1", 0, false},
	{"-9223372036854775808", 0, false},
	{"+1", 0, false},
	{"1.0", 0, false},
	{"1e3", 0, false},
	{"0x10", 0, false},
	{"1_000", 0, false},
	{"12a", 0, false},
	{strings.Repeat("9", 400) + "x", 0, false}, // saturated, then not a digit
	{"١٢", 0, false},                           // Arabic-Indic digits
	{"１２", 0, false},                           // full-width digits
	{"1\x00", 0, false},
	{"\xff1", 0, false},
}

func TestDigits(t *testing.T) {
	for _, tt := range digitsTests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			n, ok := Digits(tt.in)
			assert.Equal(t, tt.ok, ok, "digits(%q): ok", tt.in)
			assert.Equal(t, tt.n, n, "digits(%q): n", tt.in)
		})
	}
}

// FuzzDigits checks digits, which every number a server sends in a header
// goes through, against math/big: the value of a run of ASCII digits,
// saturated at math.MaxInt64, and nothing else.
func FuzzDigits(f *testing.F) {
	for _, tt := range digitsTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, ok := Digits(in)
		if want := isDigits(in); ok != want {
			t.Fatalf("digits(%q): got ok %t, want %t", in, ok, want)
		}
		if !ok {
			if n != 0 {
				t.Fatalf("digits(%q): got %d, want 0 when not ok", in, n)
			}
			return
		}
		want, _ := new(big.Int).SetString(in, 10)
		if want.Cmp(big.NewInt(math.MaxInt64)) > 0 {
			want.SetInt64(math.MaxInt64)
		}
		if n != want.Int64() {
			t.Fatalf("digits(%q): got %d, want %d", in, n, want)
		}
	})
}

// parseDelayMillisTests is shared by TestParseDelayMillis and the seed
// corpus of FuzzParseDelayMillis.
var parseDelayMillisTests = []struct {
	in   string
	want time.Duration
	ok   bool
}{
	{"1500", 1500 * time.Millisecond, true},
	{"1", time.Millisecond, true},
	{"0001", time.Millisecond, true},
	{"9223372036854", 9223372036854 * time.Millisecond, true}, // the largest whole
	{"9223372036855", math.MaxInt64, true},
	{"9223372036854775807", math.MaxInt64, true},
	{"99999999999999999999999", math.MaxInt64, true},
	{strings.Repeat("9", 400), math.MaxInt64, true},
	{"0", 0, false},
	{"000", 0, false},
	{"", 0, false},
	{" ", 0, false},
	{"-5", 0, false},
	{"-9223372036854775808", 0, false},
	{"+5", 0, false},
	{"1.5", 0, false},
	{"1e3", 0, false},
	{"5ms", 0, false},
	{"5 0", 0, false},
	{"\xff", 0, false},
}

func TestParseDelayMillis(t *testing.T) {
	for _, tt := range parseDelayMillisTests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := ParseDelayMillis(tt.in)
			assert.Equal(t, tt.ok, ok, "parseDelayMillis(%q): ok", tt.in)
			assert.Equal(t, tt.want, got, "parseDelayMillis(%q): delay", tt.in)
		})
	}
}

// FuzzParseDelayMillis checks the readers of retry-after-ms and
// x-ms-retry-after-ms: a delay only from digits, positive, in whole
// milliseconds or the largest Duration, that reads back from its own
// digits.
func FuzzParseDelayMillis(f *testing.F) {
	for _, tt := range parseDelayMillisTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := ParseDelayMillis(in)
		if !ok {
			if d != 0 {
				t.Fatalf("parseDelayMillis(%q): got (%v, false), want (0, false)", in, d)
			}
			return
		}
		if !isDigits(in) || d <= 0 {
			t.Fatalf("parseDelayMillis(%q): got (%v, true), want a positive delay from digits only", in, d)
		}
		if d == math.MaxInt64 {
			if n, err := strconv.ParseInt(in, 10, 64); err == nil && n <= math.MaxInt64/int64(time.Millisecond) {
				t.Fatalf("parseDelayMillis(%q): saturated %d ms", in, n)
			}
			return
		}
		if d%time.Millisecond != 0 {
			t.Fatalf("parseDelayMillis(%q): got %v, want whole milliseconds", in, d)
		}
		if d2, ok2 := ParseDelayMillis(strconv.FormatInt(d.Milliseconds(), 10)); d2 != d || !ok2 {
			t.Fatalf("parseDelayMillis(%q) = %v, but (%v, %t) read back", in, d, d2, ok2)
		}
	})
}

// untilEpochAt is the response time of the untilEpoch tests: Wednesday,
// 4 March 2026, 12:00:00.25 UTC.
var untilEpochAt = time.Date(2026, time.March, 4, 12, 0, 0, 250_000_000, time.UTC)

// untilEpochTests is shared by TestUntilEpoch and the seed corpus of
// FuzzUntilEpoch.
var untilEpochTests = []struct {
	name string
	secs int64
	at   time.Time
	want time.Duration
}{
	{"45 s ahead", untilEpochAt.Unix() + 45, untilEpochAt, 44750 * time.Millisecond},
	{"this second", untilEpochAt.Unix(), untilEpochAt, 0},
	{"passed", untilEpochAt.Unix() - 45, untilEpochAt, 0},
	{"zero", 0, untilEpochAt, 0},
	{"a century ahead", untilEpochAt.Unix() + 100*365*86400, untilEpochAt, 100*365*24*time.Hour - 250*time.Millisecond},
	{"past what a Duration holds", untilEpochAt.Unix() + 300*365*86400, untilEpochAt, math.MaxInt64},
	{"at the bound", MaxEpochSeconds, untilEpochAt, math.MaxInt64},
	{"past the bound", MaxEpochSeconds + 1, untilEpochAt, math.MaxInt64},
	{"the largest int64", math.MaxInt64, untilEpochAt, math.MaxInt64},
	{"against a Date in year 1", untilEpochAt.Unix(), time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64},
	{"against a Date in year 9999", untilEpochAt.Unix(), time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC), 0},
	{"the bound against year 9999", MaxEpochSeconds, time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC), math.MaxInt64},
}

func TestUntilEpoch(t *testing.T) {
	for _, tt := range untilEpochTests {
		t.Run(tt.name, func(t *testing.T) {
			got := UntilEpoch(tt.secs, tt.at)
			assert.Equal(t, tt.want, got, "untilEpoch(%d, %v)", tt.secs, tt.at)
		})
	}
}

// Unix seconds of the first and last second of the years an HTTP-date
// (four digits) names: the times untilEpoch is measured against.
const (
	year0Unix    = -62167219200 // 0000-01-01T00:00:00Z
	year9999Unix = 253402300799 // 9999-12-31T23:59:59Z
)

// FuzzUntilEpoch checks untilEpoch, which reads X-RateLimit-Reset epochs,
// against exact arithmetic in math/big, for any epoch a server sends and
// any clock of the years an HTTP-date can name: the wait until then,
// saturated at the largest Duration, never negative.
func FuzzUntilEpoch(f *testing.F) {
	for _, tt := range untilEpochTests {
		f.Add(tt.secs, tt.at.Unix(), int64(tt.at.Nanosecond()))
	}
	f.Fuzz(func(t *testing.T, secs, atSec, atNsec int64) {
		// Bring the clock into the years of an HTTP-date, where the
		// response's Date or the client's clock is.
		const span = year9999Unix - year0Unix + 1
		atSec = year0Unix + (atSec%span+span)%span
		at := time.Unix(atSec, (atNsec%1e9+1e9)%1e9)
		got := UntilEpoch(secs, at)

		want := big.NewInt(math.MaxInt64)
		if secs <= MaxEpochSeconds {
			want.Sub(big.NewInt(secs), big.NewInt(at.Unix()))
			want.Mul(want, big.NewInt(int64(time.Second)))
			want.Sub(want, big.NewInt(int64(at.Nanosecond())))
			if want.Sign() < 0 {
				want.SetInt64(0)
			}
			if want.Cmp(big.NewInt(math.MaxInt64)) > 0 {
				want.SetInt64(math.MaxInt64)
			}
		}
		if got != time.Duration(want.Int64()) {
			t.Fatalf("untilEpoch(%d, %v): got %v, want %v", secs, at, got, time.Duration(want.Int64()))
		}
	})
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func TestServerClock(t *testing.T) {
	at := func(sec, ms int) time.Time {
		return time.Date(2026, time.March, 4, 12, 0, sec, ms*1_000_000, time.UTC)
	}
	const date = "Wed, 04 Mar 2026 12:00:10 GMT"
	for _, tt := range []struct {
		name, date string
		now, want  time.Time
	}{
		{"no Date", "", at(10, 700), at(10, 700)},
		{"an invalid Date", "soon", at(10, 700), at(10, 700)},
		{"the client in the second the Date names", date, at(10, 700), at(10, 700)},
		{"the client a fifth of a second past it", date, at(11, 200), at(11, 200)},
		{"the client a fifth of a second before it", date, at(9, 800), at(9, 800)},
		{"the client 10 s behind", date, at(0, 700), at(10, 500)},
		{"the client 2 s ahead", date, at(12, 0), at(10, 500)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.date != "" {
				h.Set("Date", tt.date)
			}
			got := ServerClock(h, tt.now)
			assert.True(t, tt.want.Equal(got), "got %v, want %v", got, tt.want)
		})
	}
}

// FuzzServerClock checks that no Date a server sends panics ServerClock,
// and that the clock it gives is the client's or half a second past the
// Date's.
func FuzzServerClock(f *testing.F) {
	for _, d := range []string{"", "soon", "Wed, 04 Mar 2026 12:00:10 GMT", "Wed, 04 Mar 2026 11:59:58 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", "Monday, 04-Mar-26 12:00:10 GMT"} {
		f.Add(d)
	}
	now := time.Date(2026, time.March, 4, 12, 0, 10, 700_000_000, time.UTC)
	f.Fuzz(func(t *testing.T, date string) {
		h := http.Header{"Date": {date}}
		got := ServerClock(h, now)
		if d := ResponseDate(h, now); !got.Equal(now) && !got.Equal(d.Add(time.Second/2)) {
			t.Fatalf("ServerClock(%q) = %v: neither now nor the Date's middle", date, got)
		}
	})
}
