package resumption

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/giveup"
	"github.com/retryhttp/retryhttp/resume"
)

// Retries is the retry machine of the request whose body a Body reads,
// which the root keeps: a Body asks it for each step of a resume, as the
// retry loop takes each step of a retry. A is what it knows of an attempt
// of the request (the request as sent, its connection): a Body keeps the
// attempt of the part being read, and hands each method the attempt whose
// outcome it is about.
//
// Its methods are called on the goroutine reading the body, one at a time.
type Retries[A any] interface {
	// StallTimeout is how long a Read may wait for the server, without
	// a byte, before the body counts as cut: 0 for never. A Body asks
	// once, at its first Read.
	StallTimeout() time.Duration

	// Judge classifies the failure of the attempt a: err, a failed read
	// of its body or a request for the rest that failed, or resp, an
	// answer to a request for the rest that does not continue the body.
	Judge(a A, resp *http.Response, err error) classify.Verdict
	// Plan decides whether the failure of a judged v (resp or err, as
	// Judge was given them; no resp for a failed read) is resumed, after
	// what delay, and pays for the resume; it returns why not, when not.
	Plan(a A, resp *http.Response, err error, v classify.Verdict) (time.Duration, giveup.Reason)
	// Retry reports the resume planned, after delay, of the failure of a
	// judged v, the caller having received off bytes of the body.
	Retry(a A, delay time.Duration, resp *http.Response, err error, v classify.Verdict, off int64)
	// Release lets go of the failed attempt a: of resp, its response if
	// it has one, whose body is body (http.NoBody once closed), and of its
	// connection as the failure, err or resp judged v, says.
	Release(a A, resp *http.Response, body io.ReadCloser, err error, v classify.Verdict)
	// Wait waits for the delay of the resume planned, or until ctx is
	// done, and moves to the resume's attempt. When the wait fails, it
	// refunds the resume and returns its error, with the reason to give
	// up.
	Wait(ctx context.Context, delay time.Duration) (giveup.Reason, error)
	// Send sends the request for rest under ctx, as the resume's attempt,
	// which it returns.
	Send(ctx context.Context, rest Rest) (A, *http.Response, error)
	// Stalled returns a, an attempt Send returned that stalled on its
	// headers, as it is judged from then on: under the caller's context,
	// not the one Send was given, which the Body cancelled, so that the
	// stall is retried as other timeouts are.
	Stalled(a A) A
	// Continued tells that the answer to a continues the body: its
	// connection served it, and it is the part being read.
	Continued(a A)
	// Refund gives back what the resume planned cost: the body was
	// closed before any of it reached the caller.
	Refund()

	// Succeed tells that the body, resumed at least once, is whole.
	Succeed()
	// GiveUp reports the end of the resumes of the body, whose part being
	// read is a's, for reason, after the failure judged v (resp or err, as
	// Plan was given them), the caller having received off bytes; delay
	// is the wait the resume would have had. reason is "" for a body that
	// may not be resumed at all: err is then the *resume.Error the caller
	// gets. The Body ends with that error, or with a *resume.Error that
	// names reason.
	GiveUp(a A, reason giveup.Reason, delay time.Duration, resp *http.Response, err error, v classify.Verdict, off int64)
	// Failed reports err, which ends the body, unless GiveUp reported it.
	Failed(err *resume.Error)
}

// A Rest is a request for the rest of a body: from where the caller is to
// where the body ends, pinned to the body's representation.
type Rest struct {
	rep *Representation
	off int64
}

// Header returns the header of the request for the rest, made from h, the
// header of the request's attempts, which it leaves as it is: Range from
// the caller's offset to the body's end, If-Range with the validator, and,
// unless h chose a coding, Accept-Encoding: identity.
func (r Rest) Header(h http.Header) http.Header { return r.rep.RangeHeader(h, r.off) }
