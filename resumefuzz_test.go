package retryhttp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/resume"
)

// fuzzResumeLimit is the resumes a body gets in FuzzResumeBody: with the
// first request, at most 1+fuzzResumeLimit requests reach the server.
const fuzzResumeLimit = 4

// What a scripted server does with a request for the rest (the first byte
// of an answer's four, modulo answerKinds).
const (
	answerHonest        = iota // a 206 of the rest, as asked
	answerTampered             // a 206 of the rest, same validator, other bytes: a lie
	answerOtherETag            // a 206 of another version
	answerTwoETags             // a 206 of another version, the stale ETag first
	answerMisaligned           // a 206 of the same version, from elsewhere
	answerWhole                // a 200: If-Range did not match
	answerUnavailable          // a 503
	answerUnsatisfiable        // a 416
	answerReset                // no answer: the connection reset
	answerOverflow             // a 206 whose range ends at the largest int64
	answerKinds
)

// Flags, the third byte of an answer.
const (
	flagNoLength   = 1 << iota // no Content-Length
	flagStall                  // at the cut the body stalls, until closed
	flagLastWithEr             // the last bytes come with an error
	flagResetCut               // the cut is a reset, not an early EOF
)

// A scriptedBody is a body of a scripted answer: its bytes, then at the cut
// an error, a stall until closed, or its end.
type scriptedBody struct {
	data   []byte
	cut    int // bytes before the fault; len(data) for none
	flags  byte
	closed chan struct{}
	ctx    context.Context
}

func (b *scriptedBody) Read(p []byte) (int, error) {
	if b.cut == 0 {
		switch {
		case len(b.data) == 0 && b.flags&flagStall == 0:
			return 0, io.EOF
		case b.flags&flagStall != 0:
			// As net/http's bodies do, a stalled read ends when the
			// body is closed or the request's context is done.
			select {
			case <-b.closed:
				return 0, net.ErrClosed
			case <-b.ctx.Done():
				return 0, b.ctx.Err()
			}
		case b.flags&flagResetCut != 0:
			return 0, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		}
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, b.data[:b.cut])
	b.data, b.cut = b.data[n:], b.cut-n
	if b.cut == 0 && len(b.data) == 0 && b.flags&flagLastWithEr != 0 {
		return n, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return n, nil
}

func (b *scriptedBody) Close() error {
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	return nil
}

// fuzzBody is the representation FuzzResumeBody serves, n bytes.
func fuzzBody(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

// FuzzResumeBody serves a resumable body whose first response and every
// answer to a request for its rest follow a script, and reads it whole as
// a caller would (io.ReadAll, or io.ReadFull at its length). Whatever the
// answers, it checks that the read ends without a panic or a hang; that no
// more than 1+fuzzResumeLimit requests are sent, each asking for one range
// that holds at least a byte; that a read that ends without error returned
// the body exactly, unless a server lied undetectably (the same validator
// over other bytes, with no Repr-Digest); that, but for such a lie, every
// byte returned before an error is the body's; and that a *resume.Error's
// Offset counts the bytes the caller received.
func FuzzResumeBody(f *testing.F) {
	f.Add(uint16(1000), uint16(300), uint8(0), false, false, []byte{answerHonest, 255, 0, 0})
	f.Add(uint16(1000), uint16(300), uint8(0), true, true, []byte{answerTampered, 255, 0, 9})
	f.Add(uint16(1000), uint16(300), uint8(0), true, false, []byte{answerTampered, 100, 0, 9, answerHonest, 255, 0, 0})
	f.Add(uint16(1000), uint16(0), uint8(0), true, true, []byte{answerTampered, 255, 0, 9})
	f.Add(uint16(1000), uint16(1000), uint8(flagLastWithEr), true, true, []byte{})
	f.Add(uint16(1000), uint16(1000), uint8(flagLastWithEr), false, false, []byte{})
	f.Add(uint16(1000), uint16(300), uint8(0), false, true, []byte{answerHonest, 255, flagLastWithEr | flagNoLength, 0})
	f.Add(uint16(1000), uint16(300), uint8(0), false, false, []byte{answerTwoETags, 255, 0, 0})
	f.Add(uint16(1000), uint16(300), uint8(0), false, false, []byte{answerMisaligned, 255, 0, 3})
	f.Add(uint16(1000), uint16(300), uint8(0), false, false, []byte{answerOverflow, 255, flagNoLength, 0})
	f.Add(uint16(1000), uint16(300), uint8(flagResetCut), false, false, []byte{answerUnavailable, 0, 0, 0, answerReset, 0, 0, 0, answerHonest, 255, 0, 0})
	f.Add(uint16(1000), uint16(300), uint8(flagStall), false, false, []byte{answerHonest, 50, flagStall, 0, answerHonest, 255, flagStall, 0})
	f.Add(uint16(1000), uint16(300), uint8(0), true, false, []byte{answerHonest, 255, flagStall | flagNoLength, 0})
	f.Add(uint16(1000), uint16(300), uint8(0), false, false, []byte{answerWhole, 255, 0, 0})
	f.Add(uint16(1000), uint16(300), uint8(0), false, false, []byte{answerUnsatisfiable, 255, 0, 0})
	f.Add(uint16(1000), uint16(300), uint8(0), false, false, []byte{answerOtherETag, 255, 0, 0})
	f.Add(uint16(1), uint16(0), uint8(flagResetCut), true, false, []byte{answerHonest, 255, flagResetCut, 0})
	f.Add(uint16(10), uint16(10), uint8(flagNoLength), false, false, []byte{})
	f.Add(uint16(10), uint16(5), uint8(flagNoLength), false, true, []byte{})
	f.Fuzz(func(t *testing.T, size, cut uint16, firstFlags uint8, digest, readFull bool, script []byte) {
		n := int(size)
		if n == 0 || n > 4096 {
			n = 1 + n%4096
		}
		synctest.Test(t, func(t *testing.T) { checkResumeScript(t, n, int(cut), firstFlags, digest, readFull, script) })
	})
}

// checkResumeScript is one run of FuzzResumeBody: see there.
func checkResumeScript(t *testing.T, n, cut int, firstFlags byte, digest, readFull bool, script []byte) {
	body := fuzzBody(n, 0)
	sum := sha256.Sum256(body)
	requests, lied := 0, false
	answer := func(r *http.Request) (*http.Response, error) {
		requests++
		if requests > 1+fuzzResumeLimit {
			t.Fatalf("request %d: more than the resume limit allows", requests)
		}
		var ranges []string
		for k, vs := range r.Header {
			if strings.EqualFold(k, "Range") {
				ranges = append(ranges, vs...)
			}
		}
		h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"v1"`}}
		if requests == 1 {
			if len(ranges) != 0 {
				t.Fatalf("first request asks for %q", ranges)
			}
			if digest {
				h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":")
			}
			if firstFlags&flagNoLength != 0 {
				// An unsolicited 206 whose range no int64 can measure.
				h.Set("Content-Range", "bytes 0-9223372036854775807/*")
				return scripted(r, http.StatusPartialContent, h, body, min(cut, n), firstFlags), nil
			}
			return scripted(r, http.StatusOK, h, body, min(cut, n), firstFlags), nil
		}
		if len(ranges) != 1 {
			t.Fatalf("request %d asks for %q", requests, ranges)
		}
		spec, ok := strings.CutPrefix(ranges[0], "bytes=")
		first, err := strconv.Atoi(strings.TrimSuffix(spec, "-"))
		if !ok || err != nil || first < 0 || first >= n {
			t.Fatalf("request %d asks for %q of %d bytes", requests, ranges[0], n)
		}
		var op [4]byte
		if len(script) >= 4 {
			copy(op[:], script)
			script = script[4:]
		} else {
			op = [4]byte{answerHonest, 255, 0, 0}
		}
		rest := body[first:]
		cutAt := len(rest)
		if op[1] != 255 {
			cutAt = int(op[1]) * len(rest) / 255
		}
		h.Set("Content-Range", "bytes "+strconv.Itoa(first)+"-"+strconv.Itoa(n-1)+"/"+strconv.Itoa(n))
		switch op[0] % answerKinds {
		case answerHonest:
		case answerTampered:
			rest = bytes.Clone(rest)
			rest[int(op[3])%len(rest)] ^= 0x55
			lied = true
		case answerOtherETag, answerTwoETags:
			rest = fuzzBody(n, 1)[first:]
			h["Etag"] = []string{`"v2"`}
			if op[0]%answerKinds == answerTwoETags {
				h["Etag"] = []string{`"v1"`, `"v2"`}
			}
		case answerMisaligned:
			from := (first + 1 + int(op[3])) % n
			rest = body[from:]
			cutAt = min(cutAt, len(rest))
			h.Set("Content-Range", "bytes "+strconv.Itoa(from)+"-"+strconv.Itoa(n-1)+"/"+strconv.Itoa(n))
		case answerWhole:
			h.Del("Content-Range")
			return scripted(r, http.StatusOK, h, body, n, op[2]), nil
		case answerUnavailable:
			return scripted(r, http.StatusServiceUnavailable, http.Header{}, nil, 0, 0), nil
		case answerUnsatisfiable:
			return scripted(r, http.StatusRequestedRangeNotSatisfiable, http.Header{"Content-Range": {"bytes */" + strconv.Itoa(n)}}, nil, 0, 0), nil
		case answerReset:
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		case answerOverflow:
			h.Set("Content-Range", "bytes "+strconv.Itoa(first)+"-9223372036854775807/*")
		}
		return scripted(r, http.StatusPartialContent, h, rest, cutAt, op[2]), nil
	}
	tr := retryhttp.New(retryhttp.WithBase(roundTripperFunc(answer)), retryhttp.WithBackoff(backoff.Constant(0)), retryhttp.WithResume(resume.Limit(fuzzResumeLimit), resume.StallTimeout(time.Second)))
	// A body that cannot be resumed is not watched for stalls: as through
	// any transport, the caller's deadline ends its stalled read.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://files.test/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	var got []byte
	if readFull {
		buf := make([]byte, n)
		var m int
		m, err = io.ReadFull(resp.Body, buf)
		got = buf[:m]
	} else {
		got, err = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	honest := !lied || digest
	switch {
	case err == nil && honest && !bytes.Equal(got, body):
		t.Fatalf("read %d bytes without error, not the body's %d", len(got), n)
	case err != nil && !lied && !bytes.Equal(got, body[:min(len(got), n)]):
		t.Fatalf("a byte not the body's before %v", err)
	}
	var rerr *resume.Error
	if errors.As(err, &rerr) && rerr.Offset != int64(len(got)) {
		t.Fatalf("%v: Offset %d, the caller received %d", err, rerr.Offset, len(got))
	}
}

// scripted returns the response to r of status, with header h and a body
// of data cut after cut bytes as flags say (flagNoLength: no length).
func scripted(r *http.Request, status int, h http.Header, data []byte, cut int, flags byte) *http.Response {
	length := int64(len(data))
	if flags&flagNoLength != 0 {
		length = -1
	} else {
		h.Set("Content-Length", strconv.Itoa(len(data)))
	}
	return &http.Response{StatusCode: status, Header: h, ContentLength: length, Request: r,
		Body: &scriptedBody{data: data, cut: cut, flags: flags, closed: make(chan struct{}), ctx: r.Context()}}
}
