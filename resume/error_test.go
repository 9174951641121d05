package resume_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/resume"
)

// errCut stands for the error of a cut body.
var errCut = errorString("cut")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  resume.Error
		want string
	}{
		{resume.Error{Reason: resume.WeakValidator, Offset: 1024, Err: errCut}, "retryhttp: response body not resumed at byte 1024: entity tag is weak: cut"},
		{resume.Error{Reason: resume.GaveUp, GiveUp: retryhttp.GiveUpBudgetExhausted, Offset: 7, Resumes: 2, StatusCode: 503, Err: errCut},
			"retryhttp: response body not resumed at byte 7: resumes given up (retry budget exhausted) (status 503) after 2 resumes: cut"},
		{resume.Error{Reason: resume.DigestMismatch, Offset: 100, Resumes: 1}, "retryhttp: response body wrong at byte 100: Repr-Digest does not match the body after 1 resumes"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Error())
	}
	stalled := &resume.Error{Reason: resume.GaveUp, Err: resume.ErrStalled}
	assert.True(t, stalled.Timeout())
	assert.ErrorIs(t, stalled, resume.ErrStalled)
	assert.False(t, (&resume.Error{Reason: resume.Changed, Err: errCut}).Timeout())
}

func TestErrStalled(t *testing.T) {
	assert.EqualError(t, resume.ErrStalled, "retryhttp: response body stalled")
	var ne net.Error
	require.ErrorAs(t, resume.ErrStalled, &ne, "a stall is a net.Error")
	assert.True(t, ne.Timeout())
}
