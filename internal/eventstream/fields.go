package eventstream

import (
	"bytes"
	"math"
	"time"
)

// field is what a line is, from its field name.
type field uint8

const (
	fieldOther field = iota
	fieldComment
	fieldEvent
	fieldData
	fieldID
	fieldRetry
)

// fieldOfPartial returns the field of a line that begins with b, and
// whether the rest of the line can still change it.
func fieldOfPartial(b []byte) (field, bool) {
	if b[0] == ':' {
		return fieldComment, true
	}
	if i := bytes.IndexByte(b, ':'); i >= 0 {
		return fieldOf(b[:i]), true
	}
	if len(b) > len("retry") {
		return fieldOther, true
	}
	return fieldOther, false
}

// fieldOf returns the field a field name names.
func fieldOf(name []byte) field {
	switch string(name) {
	case "event":
		return fieldEvent
	case "data":
		return fieldData
	case "id":
		return fieldID
	case "retry":
		return fieldRetry
	}
	return fieldOther
}

// parseRetry returns the milliseconds of a retry field's value, which is
// valid when it has only ASCII digits.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	const most = math.MaxInt64 / int64(time.Millisecond)
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms <= most {
			ms = ms*10 + int64(c-'0')
		}
	}
	if ms > most {
		return math.MaxInt64, true
	}
	return time.Duration(ms) * time.Millisecond, true
}
