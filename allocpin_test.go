package retryhttp

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/deadline"
	"github.com/stretchr/testify/assert"
)

// allocsPerRoundTrip counts the allocations of a round trip of the request
// make returns, through tr, the request's body readied by reset each time.
func allocsPerRoundTrip(t *testing.T, tr http.RoundTripper, req *http.Request, reset func()) float64 {
	t.Helper()
	return testing.AllocsPerRun(100, func() {
		reset()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
}

// addedAllocs returns the allocations tr adds to each round trip of req
// over those of its base sent the same request: over the default base's
// path (tracedStub), net/http's own per request (its context) are the
// base's, not the Transport's.
func addedAllocs(t *testing.T, tr *Transport, req *http.Request, reset func()) float64 {
	t.Helper()
	return allocsPerRoundTrip(t, tr, req, reset) - allocsPerRoundTrip(t, tr.base, req, reset)
}

// TestKeyedPostAllocatesNothing pins the cost of a POST with an
// idempotency key and http.NewRequest's GetBody that succeeds at once: it
// is sent as the caller made it, and nothing is prepared for a retry.
func TestKeyedPostAllocatesNothing(t *testing.T) {
	req, reset := post(bytes.Repeat([]byte("p"), 1024), true, "k-1")
	assert.Zero(t, allocsPerRoundTrip(t, New(WithBase(newStub())), req, reset))
}

// TestKeyedSharedGetBodyAllocations pins the cost of a keyed POST whose
// GetBody may rewind a shared stream: its body is watched for the base's
// close, on a copy of the request.
func TestKeyedSharedGetBodyAllocations(t *testing.T) {
	req, reset := postShared(bytes.Repeat([]byte("p"), 1024), "k-1")
	assert.LessOrEqual(t, allocsPerRoundTrip(t, New(WithBase(newStub())), req, reset), 2.0)
}

// TestKeylessPostAllocations pins the cost of the guard of a key-less POST
// that succeeds at once: the guard, which holds the attempt's request,
// context and response wrapper, and its two httptrace hooks; a body without
// GetBody adds its copier and the GetBody that lets net/http resend the
// copy when it proves nothing was written.
func TestKeylessPostAllocations(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 1024)
	for _, tt := range []struct {
		name    string
		getBody bool
		max     float64
	}{
		{"GetBody", true, 3},
		{"no GetBody", false, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, reset := post(payload, tt.getBody, "")
			assert.LessOrEqual(t, allocsPerRoundTrip(t, New(WithBase(newStub())), req, reset), tt.max)
		})
	}
}

// TestAttemptTimeoutAllocations pins the cost of a per-attempt timeout on a
// GET that succeeds at once: the attempt (its context, request and the
// wrapper of its body), and its timer, two; over the default base's path,
// besides, the Done channel net/http's Transport asks for and the two that
// tie the context it derives to the attempt's (the context package's
// function and stop, where it would otherwise start a goroutine).
func TestAttemptTimeoutAllocations(t *testing.T) {
	get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
	for _, tt := range []struct {
		name string
		base http.RoundTripper
		max  float64
	}{{"stub", newStub(), 3}, {"traced", tracedStub{newStub()}, 6}} {
		tr := New(WithBase(tt.base), WithAttemptTimeout(time.Minute))
		assert.LessOrEqual(t, addedAllocs(t, tr, get, func() {}), tt.max, tt.name)
	}
}

// TestDeadlineHeaderAllocations pins the cost of deadline headers on a GET
// with a deadline that succeeds at once: the attempt (its request, its
// context and the headers' values), and the map of its header, which takes
// two (a map and its first group), however many formats.
func TestDeadlineHeaderAllocations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/items", nil)
	get.Header.Set("Accept", "application/json")
	for _, formats := range [][]deadline.Format{{deadline.GRPCTimeout}, allFormats} {
		tr := New(WithBase(newStub()), WithDeadlineHeader(formats...))
		assert.LessOrEqual(t, allocsPerRoundTrip(t, tr, get, func() {}), 3.0, "%d formats", len(formats))
	}
}
