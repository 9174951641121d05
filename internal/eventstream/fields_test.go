package eventstream

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRetry(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"1500", 1500 * time.Millisecond, true},
		{"0001", time.Millisecond, true},
		{"9223372036854", 9223372036854 * time.Millisecond, true},
		{"9223372036855", math.MaxInt64, true},
		{"99999999999999999999999999", math.MaxInt64, true},
		{"", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"１", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseRetry([]byte(tc.in))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFieldOfPartial(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  field
		known bool
	}{
		{":", fieldComment, true},
		{": x", fieldComment, true},
		{"d", fieldOther, false},
		{"data", fieldOther, false},
		{"data:", fieldData, true},
		{"data: x", fieldData, true},
		{"retry", fieldOther, false},
		{"retrys", fieldOther, true},
		{"id:", fieldID, true},
		{"event:x", fieldEvent, true},
		{"foo:", fieldOther, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, known := fieldOfPartial([]byte(tc.in))
			assert.Equal(t, tc.known, known)
			if known {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}
