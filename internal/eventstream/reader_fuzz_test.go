package eventstream

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReader reads a stream through a Reader whose bodies are cut at the
// points cuts gives, each reconnection answered by a server that replays
// the stream exactly from the byte after the caller's last, with a byte
// order mark first when cuts says so. It checks that: nothing panics; the
// caller gets a prefix of the stream, and the whole stream when the Reader
// ends with io.EOF; each reconnection comes at a boundary of the stream,
// with the last event ID there; a stream not resumed ends, unless passed
// through, at a boundary; and each body is closed once. Its seeds, in
// testdata/fuzz/FuzzReader, are streams of TestReaderResumes's server.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		if len(cuts) < 2 {
			return
		}
		lim := Limits{}
		if cuts[0]&1 == 1 {
			lim = Limits{Line: 1 + int(cuts[0])%64, Event: 1 + int(cuts[1])%200}
		}
		ids := boundaryIDs(stream, lim)
		rng := rand.New(rand.NewPCG(uint64(len(stream)), uint64(cuts[1])))
		var bodies []*cutBody
		newBody := func(from int64) *cutBody {
			data := stream[from:]
			if len(bodies) > 0 && (cuts[len(bodies)%len(cuts)]&2 == 2 || bytes.HasPrefix(data, []byte(bom))) {
				data = append([]byte(bom), data...)
			}
			b := &cutBody{data: data, at: len(data), rng: rng}
			if k := 2 + len(bodies); k < len(cuts) && len(bodies) < 6 {
				b.at, b.err = int(cuts[k])*len(data)/256, errCut
			}
			bodies = append(bodies, b)
			return b
		}
		var got []byte
		reconnect := func(cut Cut) (io.ReadCloser, error) {
			require.Equal(t, int64(len(got)), cut.Bytes, "bytes delivered")
			id, ok := ids[cut.Bytes]
			require.True(t, ok, "reconnection at %d, not at a boundary", cut.Bytes)
			require.Equal(t, id, cut.LastID, "last event ID")
			require.NotEmpty(t, cut.LastID)
			if cut.Err == io.EOF {
				return nil, io.EOF
			}
			return newBody(cut.Bytes), nil
		}
		r := NewReader(newBody(0), lim, reconnect)
		var err error
		for i := 0; err == nil; i++ {
			buf := make([]byte, 1+int(cuts[i%len(cuts)])%50)
			var n int
			n, err = r.Read(buf)
			got = append(got, buf[:n]...)
			require.True(t, bytes.HasPrefix(stream, got), "the caller gets the stream's bytes")
		}
		switch {
		case err == io.EOF:
			require.Equal(t, string(stream), string(got), "the whole stream")
		case r.Progress().Passthrough:
			require.ErrorIs(t, err, errCut)
		default:
			require.ErrorIs(t, err, errCut)
			_, ok := ids[int64(len(got))]
			require.True(t, ok || len(got) == 0, "a stream not resumed ends at a boundary")
		}
		require.Equal(t, int64(len(got)), r.Progress().Bytes)
		require.NoError(t, r.Close())
		for i, b := range bodies {
			require.Equal(t, 1, b.closes, "body %d closed once", i)
		}
	})
}

// boundaryIDs returns the offset of each boundary of a stream, up to a
// limit's error, with the last event ID there.
func boundaryIDs(stream []byte, lim Limits) map[int64]string {
	ids := map[int64]string{}
	p := NewParser(lim)
	for b := stream; len(b) > 0; {
		n, s, err := p.Next(b)
		if err != nil {
			break
		}
		if s != More {
			ids[p.Offset()] = p.LastID()
		}
		b = b[n:]
	}
	return ids
}
