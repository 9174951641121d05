package redisbudget

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendBatch(t *testing.T) {
	got, err := appendBatch([]byte("kept"), []throttle.Counts{
		counts("api.example", 10, 4, 2),
		healed("api.example", 1, 1, 0),
		{Scheme: "http", Host: "[::1]:8080", Refused: 1 << 48},
		sent(counts("b.example", 1, 0, 0), 1_800_000_000_123),
		sent(healed("b.example", 1, 1, 0), 1),
		sent(counts("c.example", 1, 0, 0), maxSent),
	})
	require.NoError(t, err)
	assert.Equal(t, "kept"+
		"10 4 2 0 0 https://api.example\n"+
		"1 1 0 1 0 https://api.example\n"+
		"0 0 281474976710656 0 0 http://[::1]:8080\n"+
		"1 0 0 0 1800000000123 https://b.example\n"+
		"1 1 0 1 1 https://b.example\n"+
		"1 0 0 0 9007199254740992 https://c.example\n", string(got))

	got, err = appendBatch([]byte("kept"), []throttle.Counts{counts("ok.example", 1, 0, 0), counts("", 1, 0, 0)})
	require.ErrorContains(t, err, "counts[1]: empty host")
	assert.Equal(t, "kept", string(got), "an invalid batch left bytes behind")

	// A Sent the script cannot hold, or would take for none, is refused.
	for _, at := range []time.Time{time.UnixMilli(0), time.UnixMilli(-1), time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), time.UnixMilli(maxSent + 1)} {
		c := counts("ok.example", 1, 0, 0)
		c.Sent = at
		_, err = appendBatch(nil, []throttle.Counts{c})
		require.ErrorContains(t, err, "a Sent of", "%v", at)
	}
}

// sent returns c with Sent at ms Unix milliseconds.
func sent(c throttle.Counts, ms int64) throttle.Counts {
	c.Sent = time.UnixMilli(ms)
	return c
}

// sumsTests are the replies of the exchange script, well formed or not;
// FuzzParseSums starts from them.
var sumsTests = []struct {
	name  string
	reply string
	want  []throttle.Counts
	err   string // what the error says, if one is wanted
}{
	{"none", "", nil, ""},
	{"one", "10 4 2 0 https://api.example\n", []throttle.Counts{counts("api.example", 10, 4, 2)}, ""},
	{"two", "1 0 0 0 https://a.example\n0 0 7 0 http://[::1]:8080\n",
		[]throttle.Counts{counts("a.example", 1, 0, 0), {Scheme: "http", Host: "[::1]:8080", Refused: 7}}, ""},
	{"sent", "3 0 1 1800000000123 https://a.example\n1 0 0 1 https://b.example\n",
		[]throttle.Counts{sent(counts("a.example", 3, 0, 1), 1_800_000_000_123), sent(counts("b.example", 1, 0, 0), 1)}, ""},
	{"largest", "9223372036854775807 0 0 9223372036854775807 https://a.example\n",
		[]throttle.Counts{sent(counts("a.example", math.MaxInt64, 0, 0), math.MaxInt64)}, ""},
	{"host with ://", "1 1 1 0 https://a://b\n", []throttle.Counts{{Scheme: "https", Host: "a://b", Attempts: 1, Accepted: 1, Refused: 1}}, ""},
	{"leading zeros", "007 0 0 00 https://a.example\n", []throttle.Counts{counts("a.example", 7, 0, 0)}, ""},
	{"more hosts than kept", "1 0 0 0 https://a\n1 0 0 0 https://b\n1 0 0 0 https://c\n1 0 0 0 https://d\n1 0 0 0 https://e\n", nil, "more than the 4 kept"},
	{"no newline at the end", "1 0 0 0 https://a.example", nil, "does not end a line"},
	{"overflow", "9223372036854775808 0 0 0 https://a.example\n", nil, "for a count"},
	{"sent overflow", "1 0 0 9223372036854775808 https://a.example\n", nil, "for a count"},
	{"negative", "-1 0 0 0 https://a.example\n", nil, "for a count"},
	{"negative sent", "1 0 0 -1 https://a.example\n", nil, "for a count"},
	{"plus sign", "+1 0 0 0 https://a.example\n", nil, "for a count"},
	{"two spaces", "1  0 0 0 https://a.example\n", nil, "for a count"},
	{"missing count", "1 0 0 https://a.example\n", nil, "for a count"},
	{"no counts", "https://a.example\n", nil, "for a count"},
	{"empty line", "\n", nil, "for a count"},
	{"no scheme separator", "1 0 0 0 a.example\n", nil, "names no host"},
	{"empty scheme", "1 0 0 0 ://a.example\n", nil, "empty scheme"},
	{"empty host", "1 0 0 0 https://\n", nil, "empty host"},
	{"space in host", "1 0 0 0 https://a b\n", nil, "host"},
	{"control byte", "1 0 0 0 https://a\x00b\n", nil, "host"},
	{"twice", "1 0 0 0 https://a.example\n2 0 0 5 https://a.example\n", nil, "twice"},
}

// replyMost is the most hosts the table's replies may name.
const replyMost = 4

func TestParseSums(t *testing.T) {
	for _, tt := range sumsTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSums(tt.reply, replyMost)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// formatSums formats sums as the exchange script does.
func formatSums(sums []throttle.Counts) string {
	var b strings.Builder
	for _, c := range sums {
		fmt.Fprintf(&b, "%d %d %d %d %s://%s\n", c.Attempts, c.Accepted, c.Refused, sentMilli(c.Sent), c.Scheme, c.Host)
	}
	return b.String()
}

// FuzzParseSums checks that no reply panics the parser, and that what it
// accepts is within its bounds and reads the same once formatted again.
func FuzzParseSums(f *testing.F) {
	for _, tt := range sumsTests {
		f.Add(tt.reply)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		got, err := parseSums(reply, replyMost)
		if err != nil {
			if got != nil {
				t.Fatalf("sums %v with error %v", got, err)
			}
			return
		}
		if len(got) > replyMost {
			t.Fatalf("%d hosts, more than %d", len(got), replyMost)
		}
		for _, c := range got {
			if c.Attempts < 0 || c.Accepted < 0 || c.Refused < 0 || c.Healed {
				t.Fatalf("%+v", c)
			}
			if err := checkHost(c.Scheme, c.Host); err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
		}
		again, err := parseSums(formatSums(got), replyMost)
		if err != nil {
			t.Fatalf("%q formatted again: %v", reply, err)
		}
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("%q: %v, formatted again %v", reply, got, again)
		}
	})
}
