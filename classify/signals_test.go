package classify

import (
	"net/http"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// FuzzServerSignal checks that only "true" and "false", in any case of
// their ASCII letters and with spaces and tabs around them, in the first
// value of the header, are a signal, and that ShouldRetry
// follows it for a header of any name.
func FuzzServerSignal(f *testing.F) {
	for _, tt := range parseSignalTests {
		var v1, v2 string
		if len(tt.values) > 0 {
			v1 = tt.values[0]
		}
		if len(tt.values) > 1 {
			v2 = tt.values[1]
		}
		f.Add(v1, v2, len(tt.values) > 1, "")
		f.Add(v1, v2, len(tt.values) > 1, "x-retry-ok")
	}
	trueFalse := caseVariants("true", "false")
	f.Fuzz(func(t *testing.T, v1, v2 string, two bool, name string) {
		values := []string{v1}
		if two {
			values = append(values, v2)
		}
		got := wire.ParseSignal(values)
		want := wire.SignalNone
		switch trueFalse[strings.Trim(v1, " \t")] {
		case "true":
			want = wire.SignalRetry
		case "false":
			want = wire.SignalFinal
		}
		if got != want {
			t.Fatalf("parseSignal(%q) = %d, want %d", values, got, want)
		}

		var names []string
		key := wire.ShouldRetryHeader
		if name != "" {
			names = []string{name}
			key = http.CanonicalHeaderKey(name)
		}
		h := http.Header{key: values}
		req := &http.Request{Method: http.MethodGet, Header: http.Header{}}
		verdicts := map[wire.Signal]Verdict{wire.SignalNone: {}, wire.SignalRetry: {Decision: Retry}, wire.SignalFinal: {Decision: DontRetry}}
		if v := ShouldRetry(names...).Classify(req, &http.Response{StatusCode: 500, Header: h}, nil); v != verdicts[got] {
			t.Fatalf("ShouldRetry(%q) on a 500 with %q: got %+v, want %+v", names, values, v, verdicts[got])
		}
		if v := ShouldRetry(names...).Classify(req, &http.Response{StatusCode: 200, Header: h}, nil); v != (Verdict{}) {
			t.Fatalf("ShouldRetry(%q) on a 200 with %q: got %+v, want it to abstain", names, values, v)
		}
	})
}

// caseVariants maps every spelling of the words in any case of their ASCII
// letters to the word.
func caseVariants(words ...string) map[string]string {
	m := map[string]string{}
	for _, w := range words {
		for mask := 0; mask < 1<<len(w); mask++ {
			b := []byte(w)
			for i := range b {
				if mask&(1<<i) != 0 {
					b[i] -= 'a' - 'A'
				}
			}
			m[string(b)] = w
		}
	}
	return m
}
