package retryhttp

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
)

// retryAfterNow is the time the Retry-After tests parse at, unless a test
// says otherwise: Wednesday, 4 March 2026, 12:00:00 UTC.
var retryAfterNow = time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)

type parseRetryAfterTest struct {
	name string
	in   string
	now  time.Time // retryAfterNow when zero
	want time.Duration
	ok   bool
}

func (tt parseRetryAfterTest) at() time.Time {
	if tt.now.IsZero() {
		return retryAfterNow
	}
	return tt.now
}

// parseRetryAfterTests is shared by TestParseRetryAfter and the seed corpus
// of FuzzParseRetryAfter.
var parseRetryAfterTests = []parseRetryAfterTest{
	// Absent or blank.
	{name: "empty", in: ""},
	{name: "blank", in: " \t \t"},

	// delay-seconds.
	{name: "zero", in: "0"},
	{name: "zeros", in: "000"},
	{name: "zero with OWS", in: " 0 "},
	{name: "seconds", in: "5", want: 5 * time.Second, ok: true},
	{name: "spaces", in: " 5 ", want: 5 * time.Second, ok: true},
	{name: "tabs", in: "\t7\t", want: 7 * time.Second, ok: true},
	{name: "leading zeros", in: "0005", want: 5 * time.Second, ok: true},
	{name: "minutes", in: "120", want: 2 * time.Minute, ok: true},
	{name: "largest whole", in: "9223372036", want: 9223372036 * time.Second, ok: true},
	{name: "one past largest", in: "9223372037", want: math.MaxInt64, ok: true},
	{name: "too large", in: "99999999999999", want: math.MaxInt64, ok: true},
	{name: "beyond int64", in: "99999999999999999999", want: math.MaxInt64, ok: true},
	{name: "400 digits", in: strings.Repeat("9", 400), want: math.MaxInt64, ok: true},
	{name: "400 digits then letter", in: strings.Repeat("9", 400) + "x"},
	{name: "the largest int64", in: "9223372036854775807", want: math.MaxInt64, ok: true},
	{name: "one past the largest int64", in: "9223372036854775808", want: math.MaxInt64, ok: true},
	{name: "past the largest uint64", in: "18446744073709551616", want: math.MaxInt64, ok: true},
	{name: "400 zeros then 1", in: strings.Repeat("0", 400) + "1", want: time.Second, ok: true},
	{name: "400 zeros", in: strings.Repeat("0", 400)},

	// Not delay-seconds.
	{name: "negative", in: "-1"},
	{name: "the smallest int64", in: "-9223372036854775808"},
	{name: "negative 20 digits", in: "-99999999999999999999"},
	{name: "plus", in: "+5"},
	{name: "fraction", in: "1.5"},
	{name: "exponent", in: "1e3"},
	{name: "inner space", in: "12 3"},
	{name: "hex", in: "0x10"},
	{name: "unit", in: "5s"},
	{name: "words after", in: "5 seconds"},
	{name: "words before", in: "in 5"},
	{name: "letters", in: "abc"},
	{name: "non-ASCII digits", in: "١٢"},
	{name: "full-width digits", in: "１２"},
	{name: "newline is not OWS", in: "\n5"},
	{name: "CRLF is not OWS", in: "5\r\n"},
	{name: "NUL", in: "5\x00"},
	{name: "non-breaking space is not OWS", in: "\u00a05"},
	{name: "clock time", in: "12:00:30"},
	{name: "RFC 3339", in: "2026-03-04T12:00:30Z"},
	{name: "garbage with digits", in: "x9y8z7"},

	// HTTP-date.
	{name: "IMF-fixdate", in: "Wed, 04 Mar 2026 12:00:30 GMT", want: 30 * time.Second, ok: true},
	{name: "IMF-fixdate with OWS", in: " \tWed, 04 Mar 2026 12:00:30 GMT\t ", want: 30 * time.Second, ok: true},
	{name: "IMF-fixdate next day", in: "Thu, 05 Mar 2026 12:00:00 GMT", want: 24 * time.Hour, ok: true},
	{name: "IMF-fixdate in the past", in: "Wed, 04 Mar 2026 11:59:00 GMT"},
	{name: "IMF-fixdate equal to now", in: "Wed, 04 Mar 2026 12:00:00 GMT"},
	{name: "IMF-fixdate one second ahead", in: "Wed, 04 Mar 2026 12:00:01 GMT", want: time.Second, ok: true},
	{
		name: "IMF-fixdate as of a fractional now",
		in:   "Wed, 04 Mar 2026 12:00:30 GMT",
		now:  retryAfterNow.Add(250 * time.Millisecond),
		want: 29750 * time.Millisecond,
		ok:   true,
	},
	{
		name: "IMF-fixdate as of a non-UTC now",
		in:   "Wed, 04 Mar 2026 12:00:30 GMT",
		now:  retryAfterNow.In(time.FixedZone("UTC+1", 3600)),
		want: 30 * time.Second,
		ok:   true,
	},
	{name: "RFC 850", in: "Wednesday, 04-Mar-26 12:01:00 GMT", want: time.Minute, ok: true},
	{name: "RFC 850 in the past", in: "Wednesday, 04-Mar-26 11:00:00 GMT"},
	{name: "asctime", in: "Wed Mar  4 12:02:00 2026", want: 2 * time.Minute, ok: true},
	{name: "asctime in the past", in: "Wed Mar  4 11:02:00 2026"},
	{name: "year 9999", in: "Fri, 31 Dec 9999 23:59:59 GMT", want: math.MaxInt64, ok: true},
	{name: "Unix epoch", in: "Thu, 01 Jan 1970 00:00:00 GMT"},
	{name: "year 1", in: "Mon, 01 Jan 0001 00:00:00 GMT"},
	{name: "year 0", in: "Sat, 01 Jan 0000 00:00:00 GMT"},
	{name: "five-digit year", in: "Sat, 01 Jan 10000 00:00:00 GMT"},
	{name: "negative year", in: "Sat, 01 Jan -001 00:00:00 GMT"},
	// A date and now as far apart as an HTTP-date and a clock can be: the
	// distance saturates, and never wraps to the other side.
	{
		name: "year 9999 as of year 0",
		in:   "Fri, 31 Dec 9999 23:59:59 GMT",
		now:  time.Date(0, time.January, 1, 0, 0, 0, 0, time.UTC),
		want: math.MaxInt64,
		ok:   true,
	},
	{name: "year 0 as of year 9999", in: "Sat, 01 Jan 0000 00:00:00 GMT", now: time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)},
	{
		name: "year 9999 as of the earliest time",
		in:   "Fri, 31 Dec 9999 23:59:59 GMT",
		now:  time.Unix(-1<<63, 0),
		want: math.MaxInt64,
		ok:   true,
	},
	{name: "year 0 as of a clock 10^11 years ahead", in: "Sat, 01 Jan 0000 00:00:00 GMT", now: time.Unix(1<<62, 0)},
	{name: "hour 24", in: "Wed, 04 Mar 2026 24:00:00 GMT"},
	{name: "leap second", in: "Wed, 04 Mar 2026 23:59:60 GMT"},
	// http.ParseTime's IMF-fixdate layout ends in a literal GMT, and neither
	// other layout matches "Mon,", so another zone is rejected.
	{name: "IMF-fixdate in PST", in: "Mon, 02 Jan 2006 15:04:05 PST"},
	{name: "IMF-fixdate in PST ahead", in: "Wed, 04 Mar 2026 12:00:30 PST"},
	{name: "IMF-fixdate lower-case gmt", in: "Wed, 04 Mar 2026 12:00:30 gmt"},
	{name: "IMF-fixdate with offset", in: "Wed, 04 Mar 2026 12:00:30 +0000"},
	// http.ParseTime's RFC 850 layout takes any zone abbreviation, and
	// time.Parse reads an unknown one as a zero offset: PST counts as GMT.
	{name: "RFC 850 in PST", in: "Wednesday, 04-Mar-26 12:00:30 PST", want: 30 * time.Second, ok: true},
	// time.Parse neither checks the day of the week nor minds its case, and
	// accepts fractional seconds the layout does not show.
	{name: "wrong day of the week", in: "Mon, 04 Mar 2026 12:00:30 GMT", want: 30 * time.Second, ok: true},
	{name: "upper-case names", in: "WED, 04 MAR 2026 12:00:30 GMT", want: 30 * time.Second, ok: true},
	{name: "fractional seconds", in: "Wed, 04 Mar 2026 12:00:30.5 GMT", want: 30500 * time.Millisecond, ok: true},
	{name: "nanoseconds", in: "Wed, 04 Mar 2026 12:00:30.000000001 GMT", want: 30*time.Second + 1, ok: true},
	// time.Parse reads nine digits of a fraction and drops the rest.
	{name: "fraction of 20 digits", in: "Wed, 04 Mar 2026 12:00:30.99999999999999999999 GMT", want: 30*time.Second + 999_999_999, ok: true},
	// time.Parse takes a run of spaces for each space of the layout.
	{name: "a long run of spaces inside", in: "Wed," + strings.Repeat(" ", 400) + "04 Mar 2026 12:00:30 GMT", want: 30 * time.Second, ok: true},
	{name: "a date repeated", in: strings.Repeat("Wed, 04 Mar 2026 12:00:30 GMT, ", 100)},
	{name: "invalid UTF-8 in a date", in: "Wed, 04 M\xffr 2026 12:00:30 GMT"},
	{name: "impossible date", in: "Wed, 31 Feb 2026 12:00:30 GMT"},
	{name: "one-digit day", in: "Wed, 4 Mar 2026 12:00:30 GMT"},
	{name: "date then garbage", in: "Wed, 04 Mar 2026 12:00:30 GMT junk"},
	{name: "date then seconds", in: "Wed, 04 Mar 2026 12:00:30 GMT 5"},
}

func TestParseRetryAfter(t *testing.T) {
	for _, tt := range parseRetryAfterTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := classify.ParseRetryAfter(tt.in, tt.at())
			assert.Equal(t, tt.want, got, "ParseRetryAfter(%q): got delay %v, want %v", tt.in, got, tt.want)
			assert.Equal(t, tt.ok, ok, "ParseRetryAfter(%q): got ok %v, want %v", tt.in, ok, tt.ok)
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, tt := range parseRetryAfterTests {
		now := tt.at()
		f.Add(tt.in, now.Unix(), int64(now.Nanosecond()))
	}
	f.Fuzz(func(t *testing.T, in string, sec, nsec int64) {
		now := time.Unix(sec, nsec)
		d, ok := classify.ParseRetryAfter(in, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q, %v): got delay %v, want it not negative", in, now, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q, %v): got (%v, false), want (0, false)", in, now, d)
		}
		if ok && d == 0 {
			t.Fatalf("ParseRetryAfter(%q, %v): got (0, true), want a positive delay when ok", in, now)
		}
		if d2, ok2 := classify.ParseRetryAfter(in, now); d2 != d || ok2 != ok {
			t.Fatalf("ParseRetryAfter(%q, %v): got (%v, %v), then (%v, %v)", in, now, d, ok, d2, ok2)
		}
		if d2, ok2 := classify.ParseRetryAfter(" \t"+in+"\t ", now); d2 != d || ok2 != ok {
			t.Fatalf("ParseRetryAfter(%q, %v) = (%v, %v), but with OWS around it (%v, %v)", in, now, d, ok, d2, ok2)
		}
		if !ok {
			return
		}
		if isDigits(strings.Trim(in, " \t")) {
			if d == math.MaxInt64 {
				return
			}
			if d%time.Second != 0 {
				t.Fatalf("ParseRetryAfter(%q, %v): got %v, want whole seconds or the largest Duration", in, now, d)
			}
			if d2, ok2 := classify.ParseRetryAfter(in, now.Add(time.Hour)); d2 != d || !ok2 {
				t.Fatalf("ParseRetryAfter(%q): got %v as of %v, (%v, %v) an hour later; want delay-seconds to ignore now",
					in, d, now, d2, ok2)
			}
			back := strconv.FormatInt(int64(d/time.Second), 10)
			if d2, ok2 := classify.ParseRetryAfter(back, now); d2 != d || !ok2 {
				t.Fatalf("ParseRetryAfter(%q) = %v, but (%v, %v) for %q", in, d, d2, ok2, back)
			}
			return
		}
		// An HTTP-date, which ok says is after now. Unless the distance
		// saturated, it is now+d: an hour later it is an hour nearer, and
		// written back as an IMF-fixdate it reads as the same delay.
		if d == math.MaxInt64 {
			return
		}
		if d2, ok2 := classify.ParseRetryAfter(in, now.Add(time.Hour)); d2 != max(d-time.Hour, 0) || ok2 != (d > time.Hour) {
			t.Fatalf("ParseRetryAfter(%q): got %v as of %v, (%v, %v) an hour later", in, d, now, d2, ok2)
		}
		date := now.Add(d).UTC()
		if date.Nanosecond() != 0 || date.Year() < 0 || date.Year() > 9999 {
			return // not an instant an IMF-fixdate names
		}
		back := date.Format(http.TimeFormat)
		if d2, ok2 := classify.ParseRetryAfter(back, now); d2 != d || !ok2 {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, but (%v, %v) for %q", in, now, d, d2, ok2, back)
		}
	})
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// retryAfterFloorTests is shared by TestRetryAfterFloor and the seed corpus
// of FuzzRetryAfterFloor.
var retryAfterFloorTests = []struct {
	name        string
	header      http.Header
	limit       time.Duration
	wantFloor   time.Duration
	wantTooLong bool
}{
	{name: "absent", header: http.Header{}, limit: time.Minute},
	{name: "nil header", header: nil, limit: time.Minute},
	{name: "no values", header: http.Header{"Retry-After": {}}, limit: time.Minute},
	{name: "seconds", header: http.Header{"Retry-After": {"3"}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "seconds with OWS", header: http.Header{"Retry-After": {" 3\t"}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "duplicate", header: http.Header{"Retry-After": {"3", "3"}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "duplicate but for OWS", header: http.Header{"Retry-After": {"3", " 3\t"}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "three duplicates", header: http.Header{"Retry-After": {"3", "3", "3"}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "two values: the longer", header: http.Header{"Retry-After": {"1", "2"}}, limit: time.Minute, wantFloor: 2 * time.Second},
	{name: "two values: the longer first", header: http.Header{"Retry-After": {"2", "1"}}, limit: time.Minute, wantFloor: 2 * time.Second},
	{name: "the longest of three", header: http.Header{"Retry-After": {"1", "1", "2"}}, limit: time.Minute, wantFloor: 2 * time.Second},
	{name: "an empty value is ignored", header: http.Header{"Retry-After": {"3", ""}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "garbage beside a value is ignored", header: http.Header{"Retry-After": {"soon", "3"}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "one of two beyond the limit", header: http.Header{"Retry-After": {"1", "62"}}, limit: time.Minute, wantTooLong: true},
	{name: "equal in value, not in text", header: http.Header{"Retry-After": {"3", "03"}}, limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "a date and seconds: the later", header: http.Header{"Retry-After": {"Wed, 04 Mar 2026 12:00:30 GMT", "3"}}, limit: time.Minute, wantFloor: 30 * time.Second},
	{name: "retry-after-ms", header: http.Header{"Retry-After-Ms": {"1500"}}, limit: time.Minute, wantFloor: 1500 * time.Millisecond},
	{name: "x-ms-retry-after-ms", header: http.Header{"X-Ms-Retry-After-Ms": {" 250 "}}, limit: time.Minute, wantFloor: 250 * time.Millisecond},
	{name: "milliseconds longer than seconds", header: http.Header{"Retry-After": {"1"}, "Retry-After-Ms": {"1200"}}, limit: time.Minute, wantFloor: 1200 * time.Millisecond},
	{name: "seconds longer than milliseconds", header: http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"1200"}}, limit: time.Minute, wantFloor: 2 * time.Second},
	{name: "milliseconds beyond the limit", header: http.Header{"Retry-After-Ms": {"60001"}}, limit: time.Minute, wantTooLong: true},
	{name: "milliseconds zero", header: http.Header{"Retry-After-Ms": {"0"}}, limit: time.Minute},
	{name: "milliseconds fraction", header: http.Header{"Retry-After-Ms": {"1.5"}}, limit: time.Minute},
	{name: "milliseconds negative", header: http.Header{"Retry-After-Ms": {"-5"}}, limit: time.Minute},
	{name: "milliseconds saturated", header: http.Header{"Retry-After-Ms": {"99999999999999999999999"}}, limit: math.MaxInt64, wantFloor: math.MaxInt64},
	{name: "garbage", header: http.Header{"Retry-After": {"soon"}}, limit: time.Minute},
	{name: "zero", header: http.Header{"Retry-After": {"0"}}, limit: time.Minute},
	{name: "empty value", header: http.Header{"Retry-After": {""}}, limit: time.Minute},
	{name: "equal to limit", header: http.Header{"Retry-After": {"60"}}, limit: time.Minute, wantFloor: time.Minute},
	{name: "above limit", header: http.Header{"Retry-After": {"61"}}, limit: time.Minute, wantTooLong: true},
	{name: "duplicate above limit", header: http.Header{"Retry-After": {"61", "61"}}, limit: time.Minute, wantTooLong: true},
	{name: "saturated", header: http.Header{"Retry-After": {"99999999999999"}}, limit: time.Minute, wantTooLong: true},
	{name: "saturated with largest limit", header: http.Header{"Retry-After": {"99999999999999"}}, limit: math.MaxInt64, wantFloor: math.MaxInt64},
	{name: "date", header: http.Header{"Retry-After": {"Wed, 04 Mar 2026 12:00:30 GMT"}}, limit: time.Minute, wantFloor: 30 * time.Second},
	{name: "date above limit", header: http.Header{"Retry-After": {"Wed, 04 Mar 2026 12:02:00 GMT"}}, limit: time.Minute, wantTooLong: true},
	{name: "date in the past", header: http.Header{"Retry-After": {"Wed, 04 Mar 2026 11:00:00 GMT"}}, limit: time.Minute},
	{name: "zero limit", header: http.Header{"Retry-After": {"1"}}, limit: 0, wantTooLong: true},
	{name: "zero limit absent", header: http.Header{}, limit: 0},
	{name: "negative limit counts as zero", header: http.Header{"Retry-After": {"1"}}, limit: -time.Hour, wantTooLong: true},
	// Header keys are canonical when net/http builds them; a key set
	// directly in the map in another case is not the Retry-After header.
	{name: "non-canonical key", header: http.Header{"retry-after": {"3"}}, limit: time.Minute},

	// Against the response's Date.
	{name: "a date against the response's Date", header: http.Header{"Retry-After": {"Wed, 04 Mar 2026 13:00:30 GMT"}, "Date": {"Wed, 04 Mar 2026 13:00:00 GMT"}},
		limit: time.Minute, wantFloor: 30 * time.Second},
	{name: "a date against an unreadable Date", header: http.Header{"Retry-After": {"Wed, 04 Mar 2026 12:00:30 GMT"}, "Date": {"yesterday"}},
		limit: time.Minute, wantFloor: 30 * time.Second},
	{name: "seconds ignore the response's Date", header: http.Header{"Retry-After": {"3"}, "Date": {"Sat, 01 Jan 0000 00:00:00 GMT"}},
		limit: time.Minute, wantFloor: 3 * time.Second},
	{name: "year 9999 against a Date in year 0", header: http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}, "Date": {"Sat, 01 Jan 0000 00:00:00 GMT"}},
		limit: math.MaxInt64, wantFloor: math.MaxInt64},
	{name: "year 9999 against a Date in year 0, beyond the limit", header: http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}, "Date": {"Sat, 01 Jan 0000 00:00:00 GMT"}},
		limit: time.Minute, wantTooLong: true},
	{name: "year 0 against a Date in year 9999", header: http.Header{"Retry-After": {"Sat, 01 Jan 0000 00:00:00 GMT"}, "Date": {"Fri, 31 Dec 9999 23:59:59 GMT"}},
		limit: time.Minute},

	// Hostile numbers and lists.
	{name: "milliseconds at the largest int64", header: http.Header{"Retry-After-Ms": {"9223372036854775807"}}, limit: time.Minute, wantTooLong: true},
	{name: "milliseconds of 400 digits", header: http.Header{"X-Ms-Retry-After-Ms": {strings.Repeat("9", 400)}}, limit: math.MaxInt64, wantFloor: math.MaxInt64},
	{name: "milliseconds the smallest int64", header: http.Header{"X-Ms-Retry-After-Ms": {"-9223372036854775808"}}, limit: time.Minute},
	{name: "milliseconds of spaces", header: http.Header{"Retry-After-Ms": {" \t "}}, limit: time.Minute},
	{name: "every header saturated", header: http.Header{"Retry-After": {"99999999999999999999"}, "Retry-After-Ms": {"99999999999999999999"},
		"X-Ms-Retry-After-Ms": {"99999999999999999999"}}, limit: math.MaxInt64, wantFloor: math.MaxInt64},
	{name: "a list in one value", header: http.Header{"Retry-After": {strings.Repeat("1, ", 1000) + "1"}}, limit: time.Minute},
	{name: "invalid UTF-8", header: http.Header{"Retry-After": {"\xff\xfe"}, "Retry-After-Ms": {"1\xff"}}, limit: time.Minute},
}

func TestRetryAfterFloor(t *testing.T) {
	for _, tt := range retryAfterFloorTests {
		t.Run(tt.name, func(t *testing.T) {
			floor, tooLong := retryAfterFloor(tt.header, retryAfterNow, tt.limit)
			assert.Equal(t, tt.wantFloor, floor, "got floor %v, want %v", floor, tt.wantFloor)
			assert.Equal(t, tt.wantTooLong, tooLong, "got tooLong %v, want %v", tooLong, tt.wantTooLong)
		})
	}
}

func TestRetryAfterFloorAllocs(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
	}{
		{"absent", http.Header{"Content-Type": {"text/plain"}}},
		{"seconds", http.Header{"Retry-After": {"3"}}},
		{"duplicate seconds", http.Header{"Retry-After": {"3", " 3"}}},
		{"saturated", http.Header{"Retry-After": {"99999999999999"}}},
		{"IMF-fixdate", http.Header{"Retry-After": {"Wed, 04 Mar 2026 12:00:30 GMT"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() {
				retryAfterFloor(tt.header, retryAfterNow, time.Minute)
			})
			assert.Zero(t, allocs, "got %v allocs per call, want 0", allocs)
		})
	}
}

// retryAfterHeader builds the header of FuzzRetryAfterFloor: the
// Retry-After values none, v1, v1 and v2, or v1 twice, and each of the
// millisecond headers and Date that is not empty.
func retryAfterHeader(v1, v2 string, shape uint8, ms, xms, date string) http.Header {
	h := headerOf(map[string]string{"Retry-After-Ms": ms, "X-Ms-Retry-After-Ms": xms, "Date": date})
	switch shape % 4 {
	case 1:
		h["Retry-After"] = []string{v1}
	case 2:
		h["Retry-After"] = []string{v1, v2}
	case 3:
		h["Retry-After"] = []string{v1, v1}
	}
	return h
}

func FuzzRetryAfterFloor(f *testing.F) {
	for _, tt := range retryAfterFloorTests {
		var v1, v2 string
		var shape uint8
		switch values := tt.header["Retry-After"]; len(values) {
		case 0:
		case 1:
			v1, shape = values[0], 1
		default:
			v1, v2, shape = values[0], values[1], 2
		}
		f.Add(v1, v2, shape, tt.header.Get("Retry-After-Ms"), tt.header.Get("X-Ms-Retry-After-Ms"), tt.header.Get("Date"),
			int64(tt.limit), retryAfterNow.Unix())
	}
	f.Fuzz(func(t *testing.T, v1, v2 string, shape uint8, ms, xms, date string, limit, sec int64) {
		h := retryAfterHeader(v1, v2, shape, ms, xms, date)
		now := time.Unix(sec, 0)
		lim := time.Duration(limit)
		floor, tooLong := retryAfterFloor(h, now, lim)
		if floor < 0 || floor > max(lim, 0) {
			t.Fatalf("retryAfterFloor(%q, %v, %v): got floor %v, want it in [0, limit]", h, now, lim, floor)
		}
		if tooLong && floor != 0 {
			t.Fatalf("retryAfterFloor(%q, %v, %v): got (%v, true), want floor 0 when tooLong", h, now, lim, floor)
		}
		if floor2, tooLong2 := retryAfterFloor(h, now, lim); floor2 != floor || tooLong2 != tooLong {
			t.Fatalf("retryAfterFloor(%q, %v, %v): got (%v, %v), then (%v, %v)", h, now, lim, floor, tooLong, floor2, tooLong2)
		}

		// Against classify.ParseRetryAfter and parseDelayMillis: the longest delay,
		// a date measured against a single readable Date.
		serverClock := now
		if dates := h["Date"]; len(dates) == 1 {
			if d, err := http.ParseTime(strings.Trim(dates[0], " \t")); err == nil {
				serverClock = d
			}
		}
		var longest time.Duration
		for _, v := range h["Retry-After"] {
			v = strings.Trim(v, " \t")
			clock := serverClock
			if v != "" && v[0] >= '0' && v[0] <= '9' {
				clock = now
			}
			if d, ok := classify.ParseRetryAfter(v, clock); ok {
				longest = max(longest, d)
			}
		}
		for _, v := range append(h["Retry-After-Ms"], h["X-Ms-Retry-After-Ms"]...) {
			if d, ok := wire.ParseDelayMillis(strings.Trim(v, " \t")); ok {
				longest = max(longest, d)
			}
		}
		var wantFloor time.Duration
		wantTooLong := longest > max(lim, 0)
		if !wantTooLong {
			wantFloor = longest
		}
		if floor != wantFloor || tooLong != wantTooLong {
			t.Fatalf("retryAfterFloor(%q, %v, %v): got (%v, %v), want (%v, %v)", h, now, lim, floor, tooLong, wantFloor, wantTooLong)
		}
		if wire.HasRetryAfter(h) != (len(h["Retry-After"])+len(h["Retry-After-Ms"])+len(h["X-Ms-Retry-After-Ms"]) > 0) {
			t.Fatalf("hasRetryAfter(%q) = %t", h, wire.HasRetryAfter(h))
		}
	})
}

func BenchmarkRetryAfterFloor(b *testing.B) {
	benchmarks := []struct {
		name   string
		header http.Header
	}{
		{"absent", http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"42"}}},
		{"seconds", http.Header{"Retry-After": {"3"}}},
		{"IMF-fixdate", http.Header{"Retry-After": {"Wed, 04 Mar 2026 12:00:30 GMT"}}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				retryAfterFloor(bm.header, retryAfterNow, time.Minute)
			}
		})
	}
}

func BenchmarkParseRetryAfter(b *testing.B) {
	benchmarks := []struct {
		name, in string
	}{
		{"seconds", "120"},
		{"saturated", strings.Repeat("9", 400)},
		{"IMF-fixdate", "Wed, 04 Mar 2026 12:00:30 GMT"},
		{"asctime", "Wed Mar  4 12:02:00 2026"},
		{"garbage", "soon"},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				classify.ParseRetryAfter(bm.in, retryAfterNow)
			}
		})
	}
}
