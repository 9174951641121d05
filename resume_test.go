package retryhttp

import (
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/stretchr/testify/assert"
)

// nopBody is a body that reads nothing.
type nopBody struct{}

func (nopBody) Read([]byte) (int, error) { return 0, nil }
func (nopBody) Close() error             { return nil }

func TestResumeCandidate(t *testing.T) {
	tr := New()
	tests := []struct {
		name   string
		status int
		fields map[string]string
		want   bool
	}{
		{"200 with Accept-Ranges: bytes", 200, nil, true},
		{"Accept-Ranges in a list, any case", 200, map[string]string{"Accept-Ranges": "none, Bytes"}, true},
		{"Accept-Ranges: none", 200, map[string]string{"Accept-Ranges": "none"}, false},
		{"no Accept-Ranges", 200, map[string]string{"Accept-Ranges": ""}, false},
		{"206", 206, map[string]string{"Accept-Ranges": ""}, true},
		{"404", 404, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp := testkit.Resumable(tt.status, tt.fields)
			resp.Body = nopBody{}
			assert.Equal(t, tt.want, resumeCandidate(tr, resp))
		})
	}
	_, resp := testkit.Resumable(200, nil)
	assert.False(t, resumeCandidate(tr, resp), "no body")
	resp.Body = nopBody{}
	assert.False(t, resumeCandidate(New(WithoutResume()), resp), "WithoutResume")
}

func TestWithResume(t *testing.T) {
	tr := New()
	assert.Equal(t, 10, tr.resumeLimit, "resumes by default")
	assert.Equal(t, 10*time.Second, tr.stallTimeout)
	tr = New(WithResume(resume.Limit(3), resume.StallTimeout(0)))
	assert.Equal(t, 3, tr.resumeLimit)
	assert.Equal(t, time.Duration(0), tr.stallTimeout)
	tr = New(WithResume(resume.Limit(3)), WithResume())
	assert.Equal(t, 3, tr.resumeLimit, "WithResume given again adds to the options before")
	assert.Equal(t, 0, New(WithoutResume()).resumeLimit)
	assert.PanicsWithValue(t, "retryhttp: WithResume: nil resume.Option", func() { WithResume(nil) })
}
