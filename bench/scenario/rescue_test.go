package scenario

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/bench/peers"
	"github.com/retryhttp/retryhttp/resume"
)

// rescueRows runs the rescue matrix once for the tests that read it.
var rescueRows = sync.OnceValue(func() []RescueRow { return RunRescue(context.Background(), 64) })

// TestRescueNeverWorseThanAPeer runs the rescue matrix and checks that
// retryhttp rescues every failure a peer rescues, except where a rule of its
// own, named in the row, forbids it; and that it never executes a request
// that may not be executed twice more than once.
func TestRescueNeverWorseThanAPeer(t *testing.T) {
	rows := rescueRows()
	require.GreaterOrEqual(t, len(rows), 30, "rows")
	libs := RescueLibraries()
	require.Len(t, libs, 5)
	rescuedByUs, ruled := 0, 0
	for _, r := range rows {
		require.Len(t, r.Cells, len(libs), r.Name)
		assert.False(t, r.Unsafe(peers.RetryHTTP), "%s: retryhttp executed it %d times", r.Name, r.Cells[peers.RetryHTTP].Executions)
		assert.False(t, r.Cells[peers.RetryHTTP].BodyWrong, "%s: retryhttp's caller read bytes the server did not send there", r.Name)
		if r.Rescued(peers.RetryHTTP) {
			rescuedByUs++
			continue
		}
		for _, l := range libs {
			if l.Name == peers.RetryHTTP || !r.Rescued(l.Name) {
				continue
			}
			if r.Rule == "" {
				t.Errorf("%s: %s rescued it (%v), retryhttp did not (%v), and no rule says why",
					r.Name, l.Name, r.Cells[l.Name], r.Cells[peers.RetryHTTP])
				continue
			}
			ruled++
			if r.Once {
				assert.LessOrEqual(t, r.Cells[peers.RetryHTTP].Executions, int64(1), r.Name)
			}
		}
	}
	t.Logf("retryhttp rescued %d of %d failures; %d rescues by a peer were ruled out", rescuedByUs, len(rows), ruled)

	table := RescueTable(rows)
	require.Len(t, table.Rows, len(rows))
	for _, cells := range table.Rows {
		require.Len(t, cells, len(libs)+2)
	}
}

// TestRescueRowsThatMatter pins the outcomes the rescue matrix was built to
// show, so that a change in any of them is noticed.
func TestRescueRowsThatMatter(t *testing.T) {
	rows := map[string]RescueRow{}
	for _, r := range rescueRows() {
		rows[r.Name] = r
	}
	for _, name := range []string{
		"GET: proxy answers CONNECT 503, then tunnels",
		"POST without a key: proxy answers CONNECT 503, then tunnels",
		"GET: base's ResponseHeaderTimeout, HTTP/1.1",
		"POST without a key: HTTP/2 REFUSED_STREAM",
		"PUT 512 KiB without GetBody, Content-Length: 503 before the body is read",
		"PUT 512 KiB without GetBody, chunked: 503 before the body is read",
	} {
		r, ok := rows[name]
		require.True(t, ok, name)
		assert.True(t, r.Rescued(peers.RetryHTTP), "%s: %v", name, r.Cells[peers.RetryHTTP])
		assert.Equal(t, int64(1), r.Cells[peers.RetryHTTP].Executions, name)
	}
	for name, r := range rows {
		if strings.Contains(name, "blank Idempotency-Key") || strings.Contains(name, "PROTOCOL_ERROR") {
			assert.Equal(t, int64(1), r.Cells[peers.RetryHTTP].Executions, name)
			assert.True(t, r.Unsafe(peers.RetryableHTTP), "%s: go-retryablehttp executed it once", name)
		}
	}
	r := rows["GET: proxy answers CONNECT 407 (credentials)"]
	assert.Zero(t, r.Cells[peers.RetryHTTP].Executions)
	assert.False(t, r.Cells[peers.RetryHTTP].OK())

	for name, r := range rows {
		if !strings.Contains(name, "421") {
			continue
		}
		assert.True(t, r.Rescued(peers.RetryHTTP), "%s: %v", name, r.Cells[peers.RetryHTTP])
		assert.Equal(t, int64(1), r.Cells[peers.RetryHTTP].Executions, name)
	}
	r = rows["GET: 425 Too Early, then 200"]
	assert.Equal(t, 425, r.Cells[peers.RetryHTTP].Status, "a 425 is final")
	assert.Zero(t, r.Cells[peers.RetryHTTP].Executions)
}

// TestRescueBodyRows checks that each body row's failure happens (a plain
// transport's caller reads part of the body, then an error), that no
// library gives its caller a byte the server did not send there, and what
// retryhttp made of each: the rest fetched by one more request, or the
// typed error that says why not.
func TestRescueBodyRows(t *testing.T) {
	notResumed := map[string]resume.Reason{
		"GET 1 MiB, weak ETag: body cut at 256 KiB":                             resume.WeakValidator,
		"GET 1 MiB, no validator: body cut at 256 KiB":                          resume.NoValidator,
		"GET 1 MiB, strong ETag, gzip decoded by net/http: body cut at 256 KiB": resume.Decoded,
		"POST without a key, strong ETag: response body cut at 256 KiB":         resume.Method,
	}
	n := 0
	for _, r := range rescueRows() {
		if !strings.Contains(r.Name, "at 256 KiB") {
			continue
		}
		n++
		plain := r.Cells[peers.Plain]
		assert.True(t, plain.BodyCut, "%s: plain: %v", r.Name, plain)
		assert.Equal(t, int64(1), plain.Executions, r.Name)
		for lib, c := range r.Cells {
			assert.False(t, c.BodyWrong, "%s: %s: %v", r.Name, lib, c)
		}
		ours := r.Cells[peers.RetryHTTP]
		reason, declined := notResumed[r.Name]
		if !declined {
			assert.True(t, r.Rescued(peers.RetryHTTP), "%s: %v (%v)", r.Name, ours, ours.BodyErr)
			assert.Equal(t, int64(2), ours.Executions, "%s: one request for the rest", r.Name)
			continue
		}
		var re *resume.Error
		if assert.ErrorAs(t, ours.BodyErr, &re, r.Name) {
			assert.Equal(t, reason, re.Reason, r.Name)
			assert.Zero(t, re.Resumes, r.Name)
		}
		assert.Equal(t, int64(1), ours.Executions, r.Name)
		assert.NotEmpty(t, r.Rule, r.Name)
	}
	assert.Equal(t, len(bodyCases()), n, "body rows")
}
