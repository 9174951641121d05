package eventstream

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// caller reads a Reader as a client of the stream would, with buffers of
// random sizes, and parses what it gets.
type caller struct {
	p         *Parser
	got       []string
	delivered int64
	boundary  int64 // offset of the last boundary in what was delivered
}

func (c *caller) take(t *testing.T, b []byte) {
	c.delivered += int64(len(b))
	for len(b) > 0 {
		n, s, err := c.p.Next(b)
		require.NoError(t, err)
		b = b[n:]
		if s != More {
			c.boundary = c.p.Offset()
		}
		if s == Dispatch {
			c.got = append(c.got, string(c.p.Event().Data))
		}
	}
}

// TestReaderResumes cuts a stream five times at random points, in the
// middle of events and of lines included, and checks that the caller gets
// every event once and in order, that each reconnection asks for the
// stream after the last event delivered, and that the caller never has
// part of an event when it does.
func TestReaderResumes(t *testing.T) {
	var midEvent, midLine, midCRLF int
	for seed := range uint64(30) {
		srv := server{n: 40, nl: []string{"\n", "\r\n", "\r"}[seed%3], bom: seed%2 == 1}
		t.Run(fmt.Sprintf("seed %d %q bom %v", seed, srv.nl, srv.bom), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			c := &caller{p: NewParser(Limits{})}
			first := srv.after(0)
			firstEnd := firstEventEnd(t, first)
			var bodies []*cutBody
			newBody := func(data []byte, lo int) *cutBody {
				b := &cutBody{data: data, at: len(data), rng: rng}
				if len(bodies) < 5 {
					b.at, b.err = lo+rng.IntN(len(data)-lo), errCut
				}
				bodies = append(bodies, b)
				return b
			}
			var cuts []Cut
			reconnect := func(cut Cut) (io.ReadCloser, error) {
				cuts = append(cuts, cut)
				if b := bodies[len(bodies)-1]; b.at > 0 && b.at < len(b.data) {
					before, next := b.data[b.at-1], b.data[b.at]
					switch {
					case before == '\r' && next == '\n':
						midCRLF++
					case before != '\r' && before != '\n':
						midLine++
					}
					if cut.Held > 0 {
						midEvent++
					}
				}
				require.Equal(t, c.p.LastID(), cut.LastID, "Last-Event-ID is the last delivered")
				require.Equal(t, c.delivered, cut.Bytes, "bytes delivered")
				require.Equal(t, c.boundary, cut.Bytes, "the caller has whole events only")
				require.Equal(t, int64(len(c.got)), cut.Events, "events delivered")
				if cut.Err == io.EOF {
					return nil, io.EOF
				}
				require.ErrorIs(t, cut.Err, errCut)
				after, err := strconv.Atoi(cut.LastID)
				require.NoError(t, err)
				return newBody(srv.after(after), 0), nil
			}
			r := NewReader(newBody(first, int(firstEnd)), Limits{}, reconnect)
			for {
				buf := make([]byte, 1+rng.IntN(100))
				n, err := r.Read(buf)
				c.take(t, buf[:n])
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				require.NotZero(t, n, "Read returned nothing")
			}
			want := make([]string, srv.n)
			for k := range want {
				want[k] = srv.data(k + 1)
			}
			assert.Equal(t, want, c.got, "every event once, in order")
			require.Len(t, cuts, 6, "five cuts and the end")
			assert.Equal(t, io.EOF, cuts[5].Err)
			assert.Zero(t, cuts[5].Held)
			prog := r.Progress()
			assert.Equal(t, Progress{Bytes: c.delivered, Events: int64(srv.n), LastID: strconv.Itoa(srv.n),
				Retry: 250 * time.Millisecond, HasRetry: true, Resumes: 5}, prog)
			require.NoError(t, r.Close())
			require.NoError(t, r.Close())
			for i, b := range bodies {
				assert.Equal(t, 1, b.closes, "body %d closed once", i)
			}
		})
	}
	t.Logf("cuts inside an event: %d, inside a line: %d, inside a CRLF: %d", midEvent, midLine, midCRLF)
	assert.NotZero(t, midEvent, "cuts inside an event")
	assert.NotZero(t, midLine, "cuts inside a line")
	assert.NotZero(t, midCRLF, "cuts inside a CRLF")
}

// firstEventEnd returns the offset of the end of the first event of a
// stream.
func firstEventEnd(t *testing.T, stream []byte) int64 {
	p := NewParser(Limits{})
	for b := stream; len(b) > 0; {
		n, s, err := p.Next(b)
		require.NoError(t, err)
		if s == Dispatch {
			return p.Event().End
		}
		b = b[n:]
	}
	t.Fatal("no event")
	return 0
}

func noReconnect(t *testing.T) Reconnect {
	return func(cut Cut) (io.ReadCloser, error) {
		t.Errorf("reconnect called: %+v", cut)
		return nil, cut.Err
	}
}

// TestReaderEnds: how a body's end reaches the caller when the stream is
// not continued.
func TestReaderEnds(t *testing.T) {
	errGiveUp := errors.New("given up")
	for _, tc := range []struct {
		name    string
		body    string
		err     error          // after the body; nil: io.EOF
		answer  error          // of reconnect; nil: not called
		want    string         // delivered
		wantErr error          // from the last Read
		cut     *Cut           // what reconnect is given, less Progress
		check   func(Progress) // of the Reader at the end
	}{
		{name: "no id, cut", body: "data: a\n\ndata: b\n", err: errCut, want: "data: a\n\n", wantErr: errCut},
		{name: "no id, end", body: "data: a\n\ndata: b\n", want: "data: a\n\ndata: b\n", wantErr: io.EOF},
		{name: "id reset, cut", body: "id: 1\ndata: a\n\nid\ndata: b\n\n", err: errCut, want: "id: 1\ndata: a\n\nid\ndata: b\n\n", wantErr: errCut},
		{name: "id not yet delivered", body: "data: a\n\nid: 2\ndata: b\n", err: errCut, want: "data: a\n\n", wantErr: errCut},
		{name: "clean end", body: "id: 1\ndata: a\n\n", answer: io.EOF, want: "id: 1\ndata: a\n\n", wantErr: io.EOF,
			cut: &Cut{Err: io.EOF}},
		{name: "end inside an event", body: "id: 1\ndata: a\n\ndata: b", answer: io.EOF, want: "id: 1\ndata: a\n\ndata: b", wantErr: io.EOF,
			cut: &Cut{Err: io.EOF, Held: 7}},
		{name: "cut, given up", body: "id: 1\ndata: a\n\ndata: b", err: errCut, answer: errGiveUp, want: "id: 1\ndata: a\n\n", wantErr: errGiveUp,
			cut: &Cut{Err: errCut, Held: 7}},
		{name: "retry", body: "retry: 2500\nid: 1\ndata: a\n\nretry: 7\n", err: errCut, answer: errGiveUp, want: "retry: 2500\nid: 1\ndata: a\n\n", wantErr: errGiveUp,
			cut: &Cut{Err: errCut, Held: 9}, check: func(p Progress) {
				assert.Equal(t, 7*time.Millisecond, p.Retry)
			}},
		{name: "event over the limit passes through", body: "id: 1\ndata: a\n\ndata: " + strings.Repeat("x", 40) + "\n\ndata: c", err: errCut,
			want: "id: 1\ndata: a\n\ndata: " + strings.Repeat("x", 40) + "\n\ndata: c", wantErr: errCut,
			check: func(p Progress) { assert.True(t, p.Passthrough) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &cutBody{data: []byte(tc.body), at: len(tc.body), err: tc.err, rng: rand.New(rand.NewPCG(1, 1))}
			reconnect := noReconnect(t)
			called := false
			if tc.answer != nil {
				reconnect = func(cut Cut) (io.ReadCloser, error) {
					called = true
					want := *tc.cut
					want.Progress = cut.Progress
					assert.Equal(t, want, cut)
					return nil, tc.answer
				}
			}
			r := NewReader(body, Limits{Event: 32}, reconnect)
			got, err := io.ReadAll(r)
			if tc.wantErr == io.EOF {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
			}
			assert.Equal(t, tc.want, string(got))
			assert.Equal(t, tc.answer != nil, called, "reconnect called")
			_, err = r.Read(make([]byte, 10))
			assert.ErrorIs(t, err, tc.wantErr, "the end again")
			assert.Equal(t, int64(len(got)), r.Progress().Bytes)
			if tc.check != nil {
				tc.check(r.Progress())
			}
			require.NoError(t, r.Close())
			assert.Equal(t, 1, body.closes)
		})
	}
}

// TestReaderProgress: Events and LastID count only events whose last
// byte was delivered, however small the reads.
func TestReaderProgress(t *testing.T) {
	stream := "id: 1\ndata: a\n\n: c\nid: 2\ndata: b\n\n"
	r := NewReader(io.NopCloser(strings.NewReader(stream)), Limits{}, nil)
	for i := 1; ; i++ {
		_, err := r.Read(make([]byte, 1))
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		p := r.Progress()
		require.Equal(t, int64(i), p.Bytes)
		want := Progress{Bytes: int64(i)}
		switch {
		case i >= len(stream):
			want.Events, want.LastID = 2, "2"
		case i >= 15:
			want.Events, want.LastID = 1, "1"
		}
		require.Equal(t, want, p, "after %d bytes", i)
	}
}

// TestReaderReleasesAtOnce: a Read returns each boundary, a comment line
// outside an event included, without waiting for more of the body; and as
// many whole events as fit in its buffer.
func TestReaderReleasesAtOnce(t *testing.T) {
	body := newChunks(errCut, ": ping\n", "id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\nda")
	r := NewReader(io.NopCloser(body), Limits{}, nil)
	buf := make([]byte, 100)
	n, err := r.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, ": ping\n", string(buf[:n]))
	assert.Equal(t, 1, body.reads)
	n, err = r.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "id: 1\ndata: a\n\nid: 2\ndata: b\n\n", string(buf[:n]))
	assert.Equal(t, Progress{Bytes: 37, Events: 2, LastID: "2"}, r.Progress())
}

// TestReaderStripsBOM: a body that continues the stream does so without
// its byte order mark, which the caller's parser would take for part of a
// field name.
func TestReaderStripsBOM(t *testing.T) {
	first := &cutBody{data: []byte("\xEF\xBB\xBFid: 1\ndata: a\n\nid: 2\nda"), err: errCut, rng: rand.New(rand.NewPCG(1, 1))}
	first.at = len(first.data) - 1
	for _, second := range []string{"\xEF\xBB\xBFid: 2\ndata: b\n\n", "\xEF\xBBid: 2\ndata: b\n\n", "\xEF"} {
		t.Run(fmt.Sprintf("%q", second), func(t *testing.T) {
			first.pos, first.closes = 0, 0
			r := NewReader(first, Limits{}, func(cut Cut) (io.ReadCloser, error) {
				if cut.Resumes > 0 {
					return nil, io.EOF
				}
				return io.NopCloser(newChunks(nil, second[:1], second[1:])), nil
			})
			got, err := io.ReadAll(r)
			require.NoError(t, err)
			want := "\xEF\xBB\xBFid: 1\ndata: a\n\n" + strings.TrimPrefix(second, bom)
			assert.Equal(t, want, string(got))
		})
	}
}

// TestReaderClose: Close closes the body being read once, a Read after it
// fails, and a body a reconnection returns after it is closed too.
func TestReaderClose(t *testing.T) {
	t.Run("twice", func(t *testing.T) {
		body := &cutBody{data: []byte("id: 1\ndata: a\n\n"), at: 15, rng: rand.New(rand.NewPCG(1, 1))}
		r := NewReader(body, Limits{}, nil)
		require.NoError(t, r.Close())
		require.NoError(t, r.Close())
		assert.Equal(t, 1, body.closes)
		_, err := r.Read(make([]byte, 10))
		assert.ErrorIs(t, err, ErrClosed)
	})
	t.Run("during reconnect", func(t *testing.T) {
		first := &cutBody{data: []byte("id: 1\ndata: a\n\nx"), at: 15, err: errCut, rng: rand.New(rand.NewPCG(1, 1))}
		second := &cutBody{data: []byte("id: 2\ndata: b\n\n"), at: 15, rng: rand.New(rand.NewPCG(1, 1))}
		var r *Reader
		r = NewReader(first, Limits{}, func(Cut) (io.ReadCloser, error) {
			require.NoError(t, r.Close())
			return second, nil
		})
		got, err := io.ReadAll(r)
		assert.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, "id: 1\ndata: a\n\n", string(got))
		assert.Equal(t, 1, first.closes)
		assert.Equal(t, 1, second.closes)
		require.NoError(t, r.Close())
		assert.Equal(t, 1, second.closes)
	})
	t.Run("racing a Read", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() { _, _ = pw.Write([]byte("id: 1\ndata: a\n\n")) }()
		r := NewReader(pr, Limits{}, noReconnect(t))
		n, err := r.Read(make([]byte, 100))
		require.NoError(t, err)
		require.Equal(t, 15, n)
		done := make(chan error)
		go func() {
			_, err := r.Read(make([]byte, 100))
			done <- err
		}()
		require.NoError(t, r.Close())
		assert.ErrorIs(t, <-done, ErrClosed)
	})
}

// BenchmarkReader reads a stream of 100 events with ids through a Reader,
// as a caller with a 4 KiB buffer would.
func BenchmarkReader(b *testing.B) {
	stream := server{n: 100, nl: "\n"}.after(0)
	body := &cutBody{data: stream, at: len(stream), rng: rand.New(rand.NewPCG(1, 1))}
	buf := make([]byte, 4<<10)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		body.pos, body.closes = 0, 0
		r := NewReader(body, Limits{}, nil)
		for {
			_, err := r.Read(buf)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
