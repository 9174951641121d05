package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// A Decision is a classifier's answer about one attempt's outcome. The zero
// Decision is Abstain.
type Decision int8

const (
	Abstain Decision =
	// Abstain passes the outcome to the next classifier of First.
	iota
	Retry
	DontRetry

	// Retry says the outcome is transient: another attempt may succeed.

	// DontRetry says the outcome is final.

)

// String returns the decision's name.
func (d Decision) String() string {
	switch d {
	case Abstain:
		return "abstain"
	case Retry:
		return "retry"
	case DontRetry:
		return "don't retry"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// A Verdict is what a Classifier concludes about one attempt: whether to
// retry, and facets the budget and backoff use to price and pace the retry.
// The zero Verdict abstains and no facets.
type Verdict struct {
	Decision Decision
	// Throttle reports that the server asked the client to slow down
	// (429, or 503 with Retry-After). Throttled retries use the throttle
	// backoff, whose base delay is longer.
	Throttle bool
	// Timeout reports that the attempt timed out. A retry after a timeout
	// costs more budget, since it suggests a degraded dependency.
	Timeout bool
	// Misdirected reports that the server did not process the request and
	// will not on the connection it came on: a 421 Misdirected Request (RFC
	// 9110, section 15.5.20). A Transport sends the retry without backoff
	// (a Retry-After still applies), on a new connection (the base must be
	// an *http.Transport), and only once: a second 421 is returned as it
	// is. A 421 proves the request was not processed, so it is retried
	// whatever its method, a POST without an idempotency key included; for
	// any other response the method's rules stand.
	Misdirected bool
	// RetryAfter is the least delay before a retry that the classifier read
	// from the response, for servers that say so in a header of their own
	// rather than Retry-After. It is a floor, as Retry-After is: the longer
	// of the two applies, and one beyond the Retry-After limit ends the
	// retries, returning the response. Zero asks for no floor.
	RetryAfter time.Duration
}

// A Classifier judges the outcome of one attempt: the request as sent, and
// either the response or the error the base transport returned (exactly
// one of resp and err is non-nil). It must not close resp.Body, and may read
// it only through Peek, which reads a bounded prefix, in bounded time,
// and leaves the body intact for the caller. Implementations must be safe
// for concurrent use.
type Classifier interface {
	Classify(req *http.Request, resp *http.Response, err error) Verdict
}

// Func adapts a function to the Classifier interface.
type Func func(req *http.Request, resp *http.Response, err error) Verdict

// Classify calls f(req, resp, err).
func (f Func) Classify(req *http.Request, resp *http.Response, err error) Verdict {
	return f(req, resp, err)
}

// First returns a Classifier that asks each of cs in turn and returns the
// first verdict whose Decision is not Abstain. When every one abstains, the
// outcome is final: the verdict's Decision is DontRetry. Put your own
// classifiers in front of Default to adjust it:
//
//	classify.First(classify.Statuses(classify.DontRetry, 500), classify.Default())
//
// It panics if one of cs is nil.
func First(cs ...Classifier) Classifier {
	for _, c := range cs {
		if c == nil {
			panic("classify: First: nil Classifier")
		}
	}
	return first(slices.Clone(cs))
}

// first is the Classifier First returns.
type first []Classifier

func (c first) Classify(req *http.Request, resp *http.Response, err error) Verdict {
	for _, cl := range c {
		if v := cl.Classify(req, resp, err); v.Decision != Abstain {
			return v
		}
	}
	return Verdict{Decision: DontRetry}
}

// Default returns the classifier a Transport uses unless
// WithClassifier replaces it: Context, ShouldRetry()
// (X-Should-Retry), IdempotencyConflict, Errors and
// Status, in that order. To adjust it, put your own classifiers in
// front:
//
//	classify.First(Statuses(DontRetry, 500), Default())
func Default() Classifier { return defaultClassifier{} }

// defaultClassifier is the default chain with its links called directly,
// sparing every request their dynamic calls.
type defaultClassifier struct{}

func (defaultClassifier) Classify(req *http.Request, resp *http.Response, err error) Verdict {
	if resp != nil && resp.StatusCode < 300 {
		return Verdict{Decision: DontRetry} // every link would say so: skip them
	}
	if v := (contextClassifier{}).Classify(req, resp, err); v.Decision != Abstain {
		return v
	}
	if resp != nil {
		if v := (serverSignalClassifier{}).Classify(req, resp, err); v.Decision != Abstain {
			return v
		}
		if v := (conflictClassifier{}).Classify(req, resp, err); v.Decision != Abstain {
			return v
		}
		return (statusClassifier{}).Classify(req, resp, err)
	}
	if v := (errorClassifier{}).Classify(req, resp, err); v.Decision != Abstain {
		return v
	}
	return Verdict{Decision: DontRetry}
}

// Context never retries once the caller's own context (the
// request's) is cancelled or past its deadline: the caller has given up.
func Context() Classifier { return contextClassifier{} }

type contextClassifier struct{}

func (contextClassifier) Classify(req *http.Request, _ *http.Response, _ error) Verdict {
	if req.Context().Err() != nil {
		return Verdict{Decision: DontRetry}
	}
	return Verdict{}
}

// Errors judges transport errors by their type.
//
// A ProxyConnectError is judged by its status, as Status judges
// a response: a proxy that refused a CONNECT with 502, 503 or 429 is
// retried, one that wants credentials (407) is not.
//
// Retried: retryhttp.ErrAttemptTimeout (with the Timeout facet), dial failures
// (including a refused connection), connection resets and aborts, broken
// pipes, io.EOF and io.ErrUnexpectedEOF (a connection closed mid-exchange),
// net.ErrClosed (net/http closed the connection, on the peer's hang-up,
// while the request was still being written to it),
// temporary DNS failures, other network timeouts (with the Timeout facet),
// HTTP/2 REFUSED_STREAM, and HTTP/2 streams reset with INTERNAL_ERROR (a
// server that aborted the request, as a connection reset does over HTTP/1).
// HTTP/2 resets are read from the error's type (net/http's and
// golang.org/x/net/http2's stream errors), never from its text, which a
// server can fill with anything.
//
// A context.DeadlineExceeded is retried, with the Timeout facet, only while
// the request's own context is alive: it is then a timeout of the base's
// (net/http's ResponseHeaderTimeout reports itself so over HTTP/1), not the
// caller giving up.
//
// Never retried: certificate verification failures and other TLS errors, a
// host that does not exist (NXDOMAIN), context.Canceled, and
// context.DeadlineExceeded once the request's context is done. Any other error abstains, which makes it
// final at the end of the default chain: an unsupported scheme or an invalid
// header is a programming error that a retry cannot fix.
//
// It abstains about responses.
func Errors() Classifier { return errorClassifier{} }

type errorClassifier struct{}

func (errorClassifier) Classify(req *http.Request, _ *http.Response, err error) Verdict {
	if err == nil {
		return Verdict{}
	}
	retry := Verdict{Decision: Retry}
	final := Verdict{Decision: DontRetry}

	// Our own per-attempt timeout comes first: it wraps a context error.
	if errors.Is(err, wire.ErrAttemptTimeout) {
		return Verdict{Decision: Retry, Timeout: true}
	}
	if pe := proxyRefusal(err); pe != nil {
		return statusVerdict(pe.StatusCode, pe.Header)
	}
	if errors.Is(err, context.Canceled) {
		return final
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// net/http's own timeouts (the base's ResponseHeaderTimeout over
		// HTTP/1 among them) report themselves as DeadlineExceeded too:
		// only the request's context says whether the caller gave up.
		if req == nil || req.Context().Err() != nil {
			return final
		}
		return Verdict{Decision: Retry, Timeout: true}
	}
	if isTLSError(err) {
		return final
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return final
		}
		if dnsErr.IsTimeout || dnsErr.IsTemporary {
			return Verdict{Decision: Retry, Timeout: dnsErr.IsTimeout}
		}
		return final
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return Verdict{Decision: Retry, Timeout: opErr.Timeout()}
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return retry
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return Verdict{Decision: Retry, Timeout: true}
	}
	if wire.RefusedStream(err) || wire.StreamReset(err) {
		return retry
	}
	return Verdict{}
}

// isTLSError reports errors from certificate verification or the TLS
// handshake itself, which a retry cannot fix.
func isTLSError(err error) bool {
	var (
		verifyErr   *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostname    x509.HostnameError
		invalid     x509.CertificateInvalidError
		record      tls.RecordHeaderError
		alert       tls.AlertError
		echRejected *tls.ECHRejectionError
	)
	return errors.As(err, &verifyErr) || errors.As(err, &unknownAuth) ||
		errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &record) || errors.As(err, &alert) || errors.As(err, &echRejected)
}

// Status judges responses by status code: 408, 421, 429 and every 5xx
// except 501 (Not Implemented), 505 (HTTP Version Not Supported) and 511
// (Network Authentication Required) are retried; every other status is final.
// 429, and 503 with a Retry-After header, carry the Throttle facet; 504
// carries the Timeout facet; 421 (Misdirected Request) carries the
// Misdirected facet. It abstains about errors.
//
// 425 (Too Early, RFC 8470) is final. It asks a client that sent the
// request in TLS early data to send it again once the handshake is done,
// and net/http never sends early data: the request was already sent after
// the handshake, so a retry would be the same request, refused the same
// way. When the request came through an intermediary that received it in
// early data (it carries Early-Data: 1), RFC 8470 requires the 425 to go
// back to the client that sent it, which alone can wait for its handshake.
func Status() Classifier { return statusClassifier{} }

type statusClassifier struct{}

func (statusClassifier) Classify(_ *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil {
		return Verdict{}
	}
	return statusVerdict(resp.StatusCode, resp.Header)
}

// statusVerdict judges a status code with header h, as Status
// describes.
func statusVerdict(code int, h http.Header) Verdict {
	switch {
	case code == http.StatusTooManyRequests:
		return Verdict{Decision: Retry, Throttle: true}
	case code == http.StatusServiceUnavailable:
		return Verdict{Decision: Retry, Throttle: wire.HasRetryAfter(h)}
	case code == http.StatusGatewayTimeout:
		return Verdict{Decision: Retry, Timeout: true}
	case code == http.StatusRequestTimeout:
		return Verdict{Decision: Retry}
	case code == http.StatusMisdirectedRequest:
		return Verdict{Decision: Retry, Misdirected: true}
	case code == http.StatusNotImplemented, code == http.StatusHTTPVersionNotSupported,
		code == http.StatusNetworkAuthenticationRequired:
		return Verdict{Decision: DontRetry}
	case code >= 500 && code <= 599:
		return Verdict{Decision: Retry}
	}
	return Verdict{Decision: DontRetry}
}

// Statuses returns a classifier that answers d for responses with any of the
// given status codes, and abstains otherwise. Put it in front of the
// default chain to change how a status is treated. A retried 429 carries
// the Throttle facet, and a retried 421 the Misdirected facet, as Status
// gives them.
func Statuses(d Decision, codes ...int) Classifier {
	set := make(map[int]struct{}, len(codes))
	for _, c := range codes {
		set[c] = struct{}{}
	}
	return Func(func(_ *http.Request, resp *http.Response, _ error) Verdict {
		if resp != nil {
			if _, ok := set[resp.StatusCode]; ok {
				retry := d == Retry
				return Verdict{Decision: d, Throttle: retry && resp.StatusCode == http.StatusTooManyRequests,
					Misdirected: retry && resp.StatusCode == http.StatusMisdirectedRequest}
			}
		}
		return Verdict{}
	})
}
