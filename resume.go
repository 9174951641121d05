package retryhttp

import (
	"context"
	"net/http"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/resumption"
	"github.com/retryhttp/retryhttp/resume"
)

// WithResume turns on the resumption of response bodies, as New does by
// default, configured by opts: resume.Limit (10 resumes per body) and
// resume.StallTimeout (10 s). A response body that fails after its headers
// (a cut, a reset, a stall) is asked for again from where the caller is,
// when that is provably safe, and the caller's Read goes on; otherwise the
// read ends with a *resume.Error. Each resume is a retry in every other
// respect: paid from the budget, after its backoff, within the request's
// context. Package resume says which bodies are resumed, and how. Given
// more than once, its options add up, field by field, a later one
// overriding an earlier one.
func WithResume(opts ...resume.Option) Option {
	c := config.NewResume()
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: WithResume: nil resume.Option")
		}
		o(&c) // an invalid value panics here, at the option
	}
	return func(t *Transport) {
		t.resumeOpts = append(t.resumeOpts, opts...)
		t.given |= givenResume
	}
}

// WithoutResume turns off the resumption of response bodies: a body that
// fails after the response headers fails the caller's read, as it would
// through a plain transport. NoResume turns it off for one call.
func WithoutResume() Option {
	return func(t *Transport) { t.resumeLimit, t.given = 0, t.given|givenNoResume }
}

// NoResume returns a copy of ctx under which response bodies are not
// resumed, as WithoutResume does for a whole Transport: for a caller that
// resumes by itself (an SDK's download manager), or that would rather see
// the failure. MaxAttempts(ctx, 1) turns resumption off too.
func NoResume(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.noResume = true })
}

// resumeCandidate reports whether resp, the response RoundTrip is about to
// return, shows that its body might be resumed: a 200 with a body that
// shows Accept-Ranges: bytes, or a 206, through a Transport that resumes.
// It is all a response that cannot be resumed pays for.
func resumeCandidate(t *Transport, resp *http.Response) bool {
	if t.resumeLimit == 0 || resp.ContentLength == 0 || resp.Body == http.NoBody {
		return false
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resumption.AcceptsRanges(resp.Header["Accept-Ranges"])
	case http.StatusPartialContent:
		return true
	}
	return false
}
