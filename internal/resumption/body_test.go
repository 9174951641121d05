package resumption

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/giveup"
	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A script is a retry machine that answers each request for the rest with
// the next of its answers, allows limit resumes, and records what the Body
// asked of it.
type script struct {
	answers []*http.Response
	limit   int
	calls   []string
	ranges  []string
	failed  *resume.Error
	reason  giveup.Reason
}

func (s *script) StallTimeout() time.Duration { return 0 }

func (s *script) Judge(int, *http.Response, error) classify.Verdict {
	return classify.Verdict{Decision: classify.Retry}
}

func (s *script) Plan(int, *http.Response, error, classify.Verdict) (time.Duration, giveup.Reason) {
	s.calls = append(s.calls, "plan")
	if s.limit == 0 {
		return 0, "resume_limit"
	}
	s.limit--
	return time.Millisecond, ""
}

func (s *script) Retry(_ int, _ time.Duration, _ *http.Response, _ error, _ classify.Verdict, off int64) {
	s.calls = append(s.calls, "retry")
}

func (s *script) Release(_ int, _ *http.Response, body io.ReadCloser, _ error, _ classify.Verdict) {
	s.calls = append(s.calls, "release")
	body.Close()
}

func (s *script) Wait(context.Context, time.Duration) (giveup.Reason, error) {
	s.calls = append(s.calls, "wait")
	return "", nil
}

func (s *script) Send(_ context.Context, rest Rest) (int, *http.Response, error) {
	s.calls = append(s.calls, "send")
	s.ranges = append(s.ranges, rest.Header(http.Header{}).Get("Range"))
	resp := s.answers[0]
	s.answers = s.answers[1:]
	return len(s.ranges), resp, nil
}

func (s *script) Stalled(a int) int { return a }
func (s *script) Continued(int)     { s.calls = append(s.calls, "continued") }
func (s *script) Refund()           { s.calls = append(s.calls, "refund") }
func (s *script) Succeed()          { s.calls = append(s.calls, "succeed") }

func (s *script) GiveUp(_ int, reason giveup.Reason, _ time.Duration, _ *http.Response, _ error, _ classify.Verdict, _ int64) {
	s.calls = append(s.calls, "giveup")
	s.reason = reason
}

func (s *script) Failed(err *resume.Error) { s.failed = err }

// cutBody returns s's bytes, then a connection reset.
func cutBody(s string) io.ReadCloser {
	return io.NopCloser(io.MultiReader(strings.NewReader(s), errReader{syscall.ECONNRESET}))
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// part returns a 206 of body, from first to the end of a representation of
// 100 bytes, with the ETag etag.
func part(first int, body, etag string) *http.Response {
	h := http.Header{"Etag": {etag}, "Content-Range": {"bytes " + strconv.Itoa(first) + "-99/100"}}
	return &http.Response{StatusCode: http.StatusPartialContent, Header: h, ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body))}
}

func TestBodyResumesACutBodyAsARetry(t *testing.T) {
	whole := strings.Repeat("abcdefghij", 10)
	req, resp := testkit.Resumable(http.StatusOK, nil)
	resp.Body = cutBody(whole[:30])
	s := &script{limit: 2, answers: []*http.Response{part(30, whole[30:], `"v1"`)}}
	var b Body[int, *script]
	b.Wrap(resp, req, 0, s)
	require.Same(t, &b, resp.Body.(*Body[int, *script]))

	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, whole, string(got))
	assert.Equal(t, []string{"bytes=30-"}, s.ranges)
	assert.Equal(t, []string{"plan", "retry", "release", "wait", "send", "continued", "succeed"}, s.calls)
	assert.Nil(t, s.failed)
}

func TestBodyEndsWhenTheRestIsAnotherVersion(t *testing.T) {
	whole := strings.Repeat("abcdefghij", 10)
	req, resp := testkit.Resumable(http.StatusOK, nil)
	resp.Body = cutBody(whole[:30])
	s := &script{limit: 2, answers: []*http.Response{part(30, whole[30:], `"v2"`)}}
	var b Body[int, *script]
	b.Wrap(resp, req, 0, s)

	got, err := io.ReadAll(resp.Body)
	assert.Equal(t, whole[:30], string(got), "never a byte of another version")
	var rerr *resume.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, resume.Changed, rerr.Reason)
	assert.EqualValues(t, 30, rerr.Offset)
	assert.Same(t, rerr, s.failed, "an end not given up is reported as a failure")
}

func TestBodyGivesUpWhenTheMachineSaysSo(t *testing.T) {
	whole := strings.Repeat("abcdefghij", 10)
	req, resp := testkit.Resumable(http.StatusOK, nil)
	resp.Body = cutBody(whole[:30])
	s := &script{limit: 0}
	var b Body[int, *script]
	b.Wrap(resp, req, 0, s)

	_, err := io.ReadAll(resp.Body)
	var rerr *resume.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, resume.GaveUp, rerr.Reason)
	assert.Equal(t, giveup.Reason("resume_limit"), rerr.GiveUp)
	assert.True(t, errors.Is(err, syscall.ECONNRESET), "the cause is kept")
	assert.Equal(t, []string{"plan", "release", "giveup"}, s.calls, "nothing is sent")
	assert.Nil(t, s.failed, "a give-up is reported once")
}

func TestBodyClosedNeverResumes(t *testing.T) {
	req, resp := testkit.Resumable(http.StatusOK, nil)
	resp.Body = cutBody("abc")
	s := &script{limit: 2}
	var b Body[int, *script]
	b.Wrap(resp, req, 0, s)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, resp.Body.Close(), "a second Close does nothing")
	_, err := io.ReadAll(resp.Body)
	assert.Error(t, err)
	assert.Empty(t, s.calls)
}
