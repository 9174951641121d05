package sender

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/pacing"
	"github.com/retryhttp/retryhttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// throttling answers its first request 429 with Retry-After: 5, and the
// others 200.
func throttling() http.RoundTripper {
	n := 0
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		n++
		h := http.Header{}
		status := http.StatusOK
		if n == 1 {
			status = http.StatusTooManyRequests
			h.Set("Retry-After", "5")
		}
		return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
	})
}

func pacedSender(base http.RoundTripper) (*Sender, *[]pacing.Change) {
	var changes []pacing.Change
	s := &Sender{Base: base, Pacer: pacing.New(config.NewPace()), Pace: config.NewPace(), Now: time.Now,
		PaceChanged: func(_ *http.Request, c pacing.Change) { changes = append(changes, c) }}
	return s, &changes
}

func get(t *testing.T, ctx context.Context) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
	require.NoError(t, err)
	return req
}

func TestAwaitTurnWaitsOutAHoldAndRefusesPastTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, changes := pacedSender(throttling())
		resp, err := s.Exchange(s.Base, get(t, t.Context()))
		require.NoError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Len(t, *changes, 1)
		assert.Equal(t, pacing.Started, (*changes)[0].Event)
		assert.False(t, s.FreeTurn(get(t, t.Context())), "no turn free while held")

		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		waited, err := s.AwaitTurn(ctx, get(t, ctx))
		var perr *pace.Error
		require.ErrorAs(t, err, &perr)
		assert.Zero(t, waited, "refused at once")
		assert.Equal(t, 2*time.Second-time.Millisecond, perr.Allowed, "the deadline less 1 ms to be answered, below MaxWait")

		start := time.Now()
		waited, err = s.AwaitTurn(t.Context(), get(t, t.Context()))
		require.NoError(t, err)
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Equal(t, 5*time.Second, waited)
	})
}

func TestExchangeRecordsRequestsWithADeadline(t *testing.T) {
	ok := rtFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	s := &Sender{Base: ok, Answers: latency.NewTable(deadlines.Hosts), Records: true, Now: time.Now}
	_, err := s.Exchange(s.Base, get(t, context.Background()))
	require.NoError(t, err)
	assert.Zero(t, s.Answers.Len(), "no clock read without a deadline")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = s.Exchange(s.Base, get(t, ctx))
	require.NoError(t, err)
	assert.Equal(t, 1, s.Answers.Len())
}

func TestDirect(t *testing.T) {
	req := get(t, context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	assert.True(t, (&Sender{}).Direct(req))
	assert.False(t, (&Sender{AttemptTimeout: time.Second}).Direct(req))
	assert.True(t, (&Sender{Records: true}).Direct(req), "no deadline: nothing to record")
	assert.False(t, (&Sender{Records: true}).Direct(get(t, ctx)))
	assert.True(t, (&Sender{}).FreeTurn(nil), "no pacer: every turn is free")
}
