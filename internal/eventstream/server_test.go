package eventstream

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// cutBody is a response body that returns data in reads of random sizes
// up to at, then err, or io.EOF if err is nil, and counts its Close.
type cutBody struct {
	data   []byte
	at     int
	err    error
	rng    *rand.Rand
	pos    int
	closes int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.closes > 0 {
		return 0, errors.New("read on closed body")
	}
	if b.pos == b.at {
		if b.err == nil {
			return 0, io.EOF
		}
		return 0, b.err
	}
	n := min(len(p), 1+b.rng.IntN(40), b.at-b.pos)
	copy(p, b.data[b.pos:b.pos+n])
	b.pos += n
	return n, nil
}

func (b *cutBody) Close() error {
	b.closes++
	return nil
}

// server is an event stream of events 1 to n that replays from after any
// of them, in the line end nl, with comments, multi-line data, a retry,
// and a byte order mark before each body when bom is set.
type server struct {
	n   int
	nl  string
	bom bool
}

// event returns the block of event k.
func (s server) event(k int) string {
	var b strings.Builder
	if k%4 == 0 {
		b.WriteString(": keepalive" + s.nl)
	}
	fmt.Fprintf(&b, "id: %d%sevent: tick%s", k, s.nl, s.nl)
	if k%3 == 0 {
		b.WriteString("retry: 250" + s.nl)
	}
	fmt.Fprintf(&b, "data: {\"n\":%d,%s\"pad\":%q}%s", k, s.nl+"data: ", strings.Repeat("x", k%17), s.nl)
	b.WriteString(s.nl)
	return b.String()
}

// data returns the data of event k, as a parser joins it.
func (s server) data(k int) string {
	return fmt.Sprintf("{\"n\":%d,\n\"pad\":%q}", k, strings.Repeat("x", k%17))
}

// after returns the body that continues the stream after event k.
func (s server) after(k int) []byte {
	var b strings.Builder
	if s.bom {
		b.WriteString(bom)
	}
	if k == 0 {
		b.WriteString(": welcome" + s.nl + s.nl)
	}
	for i := k + 1; i <= s.n; i++ {
		b.WriteString(s.event(i))
	}
	return []byte(b.String())
}
