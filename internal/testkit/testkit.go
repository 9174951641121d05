// Package testkit holds the small helpers the tests of several packages
// share: requests, bodies that count or pause, and header builders.
package testkit

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Get returns a GET request for url, failing t if url is invalid.
func Get(t testing.TB, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A CountingBody is a response body that counts its Close calls.
type CountingBody struct {
	io.Reader
	Closes atomic.Int32
}

// NewCountingBody returns a CountingBody that reads s.
func NewCountingBody(s string) *CountingBody { return &CountingBody{Reader: strings.NewReader(s)} }

// Close counts the call.
func (b *CountingBody) Close() error {
	b.Closes.Add(1)
	return nil
}

// A PausingBody gives its first part, then blocks until Release is closed
// or the body is, then gives the rest.
type PausingBody struct {
	first, rest string
	// Release, closed by the test, lets the rest be read.
	Release chan struct{}
	closed  chan struct{}
	stage   int
	// Closes counts the Close calls.
	Closes atomic.Int32
}

// NewPausingBody returns a PausingBody that gives first, then rest.
func NewPausingBody(first, rest string) *PausingBody {
	return &PausingBody{first: first, rest: rest, Release: make(chan struct{}), closed: make(chan struct{})}
}

// Read gives the first part, then waits, then gives the rest.
func (b *PausingBody) Read(p []byte) (int, error) {
	switch b.stage {
	case 0:
		b.stage++
		return copy(p, b.first), nil
	case 1:
		select {
		case <-b.Release:
		case <-b.closed:
			return 0, errors.New("read on closed body")
		}
		b.stage++
		return copy(p, b.rest), nil
	}
	return 0, io.EOF
}

// Close ends a wait for Release, and counts the call.
func (b *PausingBody) Close() error {
	if b.Closes.Add(1) == 1 {
		close(b.closed)
	}
	return nil
}

// HeaderOf returns a header with each non-empty value of fields.
func HeaderOf(fields map[string]string) http.Header {
	h := http.Header{}
	for k, v := range fields {
		if v != "" {
			h[k] = []string{v}
		}
	}
	return h
}

// IsDigits reports whether s is a non-empty run of ASCII digits.
func IsDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Receive returns the next value of ch, failing the test if none comes
// within a long time: a guard against a hang, not a timing.
func Receive(t testing.TB, ch chan int) int {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived")
		return 0
	}
}

// Resumable returns a response to a GET that may be resumed, with the
// header fields given (an empty value deletes one), and its request.
func Resumable(status int, fields map[string]string) (*http.Request, *http.Response) {
	req, _ := http.NewRequest(http.MethodGet, "https://bucket.example/key", nil)
	h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"v1"`}, "Content-Length": {"100"}}
	for k, v := range fields {
		if v == "" {
			delete(h, k)
		} else {
			h[k] = []string{v}
		}
	}
	resp := &http.Response{StatusCode: status, Header: h, ContentLength: 100, Body: http.NoBody, Request: req}
	return req, resp
}
