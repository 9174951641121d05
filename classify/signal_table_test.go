package classify

import (
	"net/http"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
)

func TestParseSignal(t *testing.T) {
	for _, tt := range parseSignalTests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, wire.ParseSignal(tt.values), "parseSignal(%q)", tt.values)
			assert.Equal(t, tt.want, serverSignal(http.Header{wire.ShouldRetryHeader: tt.values}, nil), "serverSignal(%q)", tt.values)
		})
	}
}

// parseSignalTests is shared by TestParseSignal and the seed corpus of
// FuzzServerSignal.
var parseSignalTests = []struct {
	name   string
	values []string
	want   wire.Signal
}{
	{"absent", nil, wire.SignalNone},
	{"true", []string{"true"}, wire.SignalRetry},
	{"false", []string{"false"}, wire.SignalFinal},
	{"upper case", []string{"TRUE"}, wire.SignalRetry},
	{"mixed case", []string{"FaLsE"}, wire.SignalFinal},
	{"spaces and tabs around", []string{" \tfalse\t "}, wire.SignalFinal},
	{"the first value decides", []string{"false", "true"}, wire.SignalFinal},
	{"an unreadable first value", []string{"maybe", "true"}, wire.SignalNone},
	{"empty", []string{""}, wire.SignalNone},
	{"spaces", []string{"   "}, wire.SignalNone},
	{"one", []string{"1"}, wire.SignalNone},
	{"yes", []string{"yes"}, wire.SignalNone},
	{"cut short", []string{"tru"}, wire.SignalNone},
	{"longer", []string{"truee"}, wire.SignalNone},
	{"a list", []string{"true, false"}, wire.SignalNone},
	{"quoted", []string{`"true"`}, wire.SignalNone},
	{"NUL", []string{"true\x00"}, wire.SignalNone},
	{"newline is not OWS", []string{"true\n"}, wire.SignalNone},
	{"non-breaking space is not OWS", []string{"\u00a0true"}, wire.SignalNone},
	// HTTP compares tokens in ASCII: a long s (U+017F), which Unicode
	// folds to s, does not spell false.
	{"long s", []string{"fal\u017fe"}, wire.SignalNone},
	{"full-width letters", []string{"\uff54\uff52\uff55\uff45"}, wire.SignalNone},
	{"invalid UTF-8", []string{"tr\xffe"}, wire.SignalNone},
	{"true a thousand times", []string{strings.Repeat("true", 1000)}, wire.SignalNone},
}
