package retryhttp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/resume"
	rhttptest "github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logRecorder is a slog handler that keeps every record, at every level.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// take returns the records kept since the last take.
func (h *logRecorder) take() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.records
	h.records = nil
	return rs
}

// atLevel returns the records of rs at level.
func atLevel(rs []slog.Record, level slog.Level) []slog.Record {
	var out []slog.Record
	for _, r := range rs {
		if r.Level == level {
			out = append(out, r)
		}
	}
	return out
}

// withMessage returns the records of rs with message msg.
func withMessage(rs []slog.Record, msg string) []slog.Record {
	var out []slog.Record
	for _, r := range rs {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}

// attr returns the value of r's attribute key, and whether r has one.
func attr(r slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

// attemptNumbers returns the attempt numbers of the attempt records of rs,
// which must all be at DEBUG.
func attemptNumbers(t *testing.T, rs []slog.Record) []int {
	t.Helper()
	var ns []int
	for _, r := range withMessage(rs, "retryhttp: attempt") {
		require.Equal(t, slog.LevelDebug, r.Level)
		v, ok := attr(r, "attempt")
		require.True(t, ok)
		ns = append(ns, int(v.Int64()))
	}
	return ns
}

// rangeFile serves body, with the entity tag etag, as net/http serves a
// file: with Accept-Ranges, a length, and ranges honoured under If-Range.
func rangeFile(body []byte, etag string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Etag", etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

// TestLogLevels checks, for each way a call ends, that it logs at most one
// line at INFO, the one an operator acts on, and each attempt at DEBUG.
func TestLogLevels(t *testing.T) {
	file := bytes.Repeat([]byte("0123456789"), 10)
	tests := []struct {
		name string
		opts []Option
		base func() http.RoundTripper
		// call makes the call, and reads and closes its body.
		call func(t *testing.T, tr *Transport)
		// info is the message of the call's one line at INFO, "" if none;
		// reason is its reason attribute.
		info, reason string
		// debug is a message the call logs at DEBUG, beside its attempts.
		debug    string
		attempts []int
	}{
		{
			name:     "success",
			base:     func() http.RoundTripper { return &script{steps: statuses(200)} },
			attempts: []int{1},
		},
		{
			name:     "retried then success",
			base:     func() http.RoundTripper { return &script{steps: statuses(503, 200)} },
			debug:    "retryhttp: retrying",
			attempts: []int{1, 2},
		},
		{
			name:     "attempts exhausted on 503",
			base:     func() http.RoundTripper { return &script{steps: statuses(503)} },
			info:     "retryhttp: not retrying",
			reason:   string(GiveUpAttemptsExhausted),
			debug:    "retryhttp: retrying",
			attempts: []int{1, 2, 3},
		},
		{
			name:     "budget exhausted",
			opts:     []Option{WithBudget(budget.NewBucket(budget.Capacity(5), budget.RetryCost(5), budget.TimeoutCost(5)))},
			base:     func() http.RoundTripper { return &script{steps: statuses(503)} },
			info:     "retryhttp: not retrying",
			reason:   string(GiveUpBudgetExhausted),
			attempts: []int{1, 2},
		},
		{
			name: "Retry-After beyond the limit",
			base: func() http.RoundTripper {
				return &script{steps: []step{{status: 429, header: http.Header{"Retry-After": {"3600"}}}}}
			},
			info:     "retryhttp: not retrying",
			reason:   string(GiveUpRetryAfterLimit),
			attempts: []int{1},
		},
		{
			name:     "final 404",
			base:     func() http.RoundTripper { return &script{steps: statuses(404)} },
			attempts: []int{1},
		},
		{
			name:  "one attempt allowed",
			opts:  []Option{WithMaxAttempts(1)},
			base:  func() http.RoundTripper { return &script{steps: statuses(503)} },
			debug: "retryhttp: not retrying",
			// Nothing was retried: the caller gets what a plain
			// transport gives.
			attempts: []int{1},
		},
		{
			name: "not resendable",
			base: func() http.RoundTripper { return &script{steps: statuses(503)} },
			call: func(t *testing.T, tr *Transport) {
				req, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "payload", true)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
			},
			debug:    "retryhttp: not retrying",
			attempts: []int{1},
		},
		{
			name: "body over the buffer limit",
			opts: []Option{WithBodyBufferLimit(4)},
			base: func() http.RoundTripper { return &script{steps: statuses(503)} },
			call: func(t *testing.T, tr *Transport) {
				req, _ := withBody(t, t.Context(), http.MethodPut, "http://svc.test/", "longer than four bytes", false)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
			},
			// The retry configured cannot happen: an operator acts on it.
			info:     "retryhttp: not retrying",
			reason:   string(GiveUpBodyNotReplayable),
			attempts: []int{1},
		},
		{
			name: "caller cancels during the wait",
			base: func() http.RoundTripper { return &script{steps: statuses(503)} },
			call: func(t *testing.T, tr *Transport) {
				ctx, cancel := context.WithCancel(t.Context())
				tr.onRetry = func(RetryEvent) { cancel() }
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
				_, err := tr.RoundTrip(req)
				require.ErrorIs(t, err, context.Canceled)
			},
			debug:    "retryhttp: not retrying",
			attempts: []int{1},
		},
		{
			name: "caller cancels during an attempt",
			base: func() http.RoundTripper {
				return rtFunc(func(r *http.Request) (*http.Response, error) {
					<-r.Context().Done()
					return nil, r.Context().Err()
				})
			},
			call: func(t *testing.T, tr *Transport) {
				ctx, cancel := context.WithCancel(t.Context())
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
				time.AfterFunc(time.Second, cancel)
				_, err := tr.RoundTrip(req)
				require.ErrorIs(t, err, context.Canceled)
			},
			attempts: []int{1},
		},
		{
			name: "resume refused",
			base: func() http.RoundTripper {
				return rhttptest.NewTransport(rangeFile(file, `"v1"`),
					rhttptest.Sequence(rhttptest.ResetAfter(40), rhttptest.Status(http.StatusForbidden)))
			},
			info:     "retryhttp: response body failed",
			reason:   string(resume.Refused),
			debug:    "retryhttp: resuming response body",
			attempts: []int{1, 2},
		},
		{
			name: "body not resumable",
			base: func() http.RoundTripper {
				return rhttptest.NewTransport(rangeFile(file, `W/"v1"`), rhttptest.Sequence(rhttptest.ResetAfter(40)))
			},
			info:     "retryhttp: not retrying",
			reason:   string(GiveUpNotResumable),
			attempts: []int{1},
		},
		{
			name: "resume limit reached",
			opts: []Option{WithResume(resume.Limit(1))},
			base: func() http.RoundTripper {
				return rhttptest.NewTransport(rangeFile(file, `"v1"`),
					rhttptest.Sequence(rhttptest.ResetAfter(40), rhttptest.ResetAfter(20)))
			},
			// The give-up is the line; the *resume.Error the reader gets
			// is not logged again.
			info:     "retryhttp: not retrying",
			reason:   string(GiveUpResumeLimit),
			debug:    "retryhttp: resuming response body",
			attempts: []int{1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &logRecorder{}
				opts := append([]Option{WithLogger(slog.New(rec)), WithBackoff(backoff.Constant(10 * time.Millisecond))}, tt.opts...)
				tr := newTestTransport(tt.base(), 0.5, opts...)
				if tt.call != nil {
					tt.call(t, tr)
				} else {
					resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
					require.NoError(t, err)
					_, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				rs := rec.take()
				info := atLevel(rs, slog.LevelInfo)
				if tt.info == "" {
					assert.Empty(t, info, "lines at INFO")
				} else if assert.Len(t, info, 1, "lines at INFO") {
					assert.Equal(t, tt.info, info[0].Message)
					reason, _ := attr(info[0], "reason")
					assert.Equal(t, tt.reason, reason.String())
				}
				assert.Equal(t, tt.attempts, attemptNumbers(t, rs), "attempts at DEBUG")
				if tt.debug != "" {
					assert.NotEmpty(t, withMessage(atLevel(rs, slog.LevelDebug), tt.debug), "%q at DEBUG", tt.debug)
				}
				assert.Empty(t, atLevel(rs, slog.LevelWarn), "lines at WARN")
				assert.Empty(t, atLevel(rs, slog.LevelError), "lines at ERROR")
			})
		})
	}
}

// TestLogDeadlineTimeLeft checks that a give-up for lack of time logs the
// time that would have been left once the retry was sent, after its delay:
// none here, since the delay passes the deadline, and never a negative
// time.
func TestLogDeadlineTimeLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &logRecorder{}
		tr := newTestTransport(&script{steps: statuses(503)}, 0.5, WithLogger(slog.New(rec)), WithBackoff(backoff.Constant(50*time.Millisecond)))
		resp, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", 30*time.Millisecond))
		require.NoError(t, err)
		resp.Body.Close()
		info := atLevel(rec.take(), slog.LevelInfo)
		require.Len(t, info, 1)
		reason, _ := attr(info[0], "reason")
		assert.Equal(t, string(GiveUpDeadline), reason.String())
		delay, _ := attr(info[0], "delay")
		assert.Equal(t, 50*time.Millisecond, delay.Duration())
		left, _ := attr(info[0], "time_left")
		assert.Equal(t, time.Duration(0), left.Duration(), "30 ms left, less the 50 ms wait: none")
	})
}

// TestLogThrottlingStartsAndEnds checks that adaptive throttling logs at
// INFO once when it starts refusing a host's requests and once when it
// ends, each refusal at DEBUG, and no call more than one line at INFO: the
// call whose give-up starts the throttling logs the start, and its give-up
// at DEBUG.
func TestLogThrottlingStartsAndEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &logRecorder{}
		var failing atomic.Bool
		failing.Store(true)
		tr := newTestTransport(switchingBase(&failing), 0.5, WithLogger(slog.New(rec)), WithMaxAttempts(2), WithoutBudget(),
			WithBackoff(backoff.Constant(10*time.Millisecond)), WithAdaptiveThrottling(throttle.MinRequests(4)))
		var infos []string // the INFO lines, call by call
		call := func() ([]slog.Record, error) {
			_, err := roundTrip(tr, "http://svc.test/")
			rs := rec.take()
			info := atLevel(rs, slog.LevelInfo)
			require.LessOrEqual(t, len(info), 1, "lines at INFO of call %d", len(infos)+1)
			msg := ""
			if len(info) == 1 {
				msg = info[0].Message
			}
			infos = append(infos, msg)
			return rs, err
		}

		// Two attempts fail: the window holds 2 of the 4 needed.
		_, err := call()
		require.NoError(t, err)
		assert.Equal(t, "retryhttp: not retrying", infos[0])
		// Two more: refused with 0.8 from now on.
		rs, err := call()
		require.NoError(t, err)
		assert.Equal(t, "retryhttp: throttling started", infos[1])
		start := atLevel(rs, slog.LevelInfo)[0]
		host, _ := attr(start, "host")
		assert.Equal(t, "svc.test", host.String())
		p, _ := attr(start, "rejection_probability")
		assert.InDelta(t, 0.8, p.Float64(), 1e-9)
		assert.Len(t, withMessage(atLevel(rs, slog.LevelDebug), "retryhttp: not retrying"), 1, "the give-up, at DEBUG")
		// Refused (0.5 < 0.8): at DEBUG only, each time.
		for range 3 {
			rs, err = call()
			require.ErrorIs(t, err, ErrThrottled)
			assert.Len(t, withMessage(atLevel(rs, slog.LevelDebug), "retryhttp: throttled"), 1)
		}

		// The host heals; a request gets through (0.95 > 0.9), and its
		// success ends the throttling.
		failing.Store(false)
		tr.rand = func() float64 { return 0.95 }
		_, err = call()
		require.NoError(t, err)
		assert.Equal(t, []string{
			"retryhttp: not retrying", "retryhttp: throttling started", "", "", "",
			"retryhttp: throttling ended",
		}, infos)
		p0, _ := rejection(tr, "svc.test")
		assert.Zero(t, p0)

		// Failing again, the host is throttled again, and says so once.
		failing.Store(true)
		tr.rand = func() float64 { return 0.4 }
		infos = nil
		for range 4 {
			_, _ = call()
		}
		assert.Equal(t, []string{"retryhttp: not retrying", "retryhttp: throttling started", "", ""}, infos)
	})
}

// TestLogAtInfoIsQuietForARescuedCall checks, through a text handler at
// INFO as a service would configure it, that a call its retries rescue
// writes nothing, and one given up on writes one line.
func TestLogAtInfoIsQuietForARescuedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
		base := &script{steps: []step{{err: syscall.ECONNRESET}, {status: 200}}}
		tr := newTestTransport(base, 0.5, WithLogger(logger))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/?token=secret"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Empty(t, buf.String())

		base.steps, base.attempts = statuses(503), 0
		resp, err = tr.RoundTrip(get(t, "http://svc.test/?token=secret"))
		require.NoError(t, err)
		resp.Body.Close()
		lines := slices.DeleteFunc(bytes.Split(buf.Bytes(), []byte("\n")), func(l []byte) bool { return len(l) == 0 })
		require.Len(t, lines, 1)
		assert.Contains(t, string(lines[0]), `level=INFO msg="retryhttp: not retrying" method=GET url=http://svc.test/ attempt=3 status=503 reason="attempts exhausted"`)
		assert.NotContains(t, buf.String(), "secret")
	})
}
