package retryhttp

import (
	"context"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// Defaults of the resumption of response bodies; the package documentation
// tabulates them with their reasons.
const (
	// DefaultStallTimeout is how long a read of a resumable response body
	// may wait without receiving a byte before the body is treated as cut
	// and resumed (WithStallTimeout).
	DefaultStallTimeout = 10 * time.Second
	// DefaultResumeLimit is the most resumes one response body gets
	// (WithResumeLimit).
	DefaultResumeLimit = 10
)

// WithoutResume turns off the resumption of response bodies: a body that
// fails after the response headers fails the caller's read, as it would
// through a plain transport. NoResume turns it off for one call.
func WithoutResume() Option {
	return func(t *Transport) { t.resumeLimit = 0 }
}

// WithResumeLimit sets the most resumes one response body gets: requests
// for the rest of the body, each sent after a read of it failed (a cut, a
// reset, a stall) or after an earlier such request failed. Each is a retry
// in every other respect: paid from the budget, after its backoff, within
// the request's context. A body that fails once more ends the caller's
// read with a *ResumeError (GiveUpResumeLimit). The default is 10. n must
// be at least 1; WithoutResume turns resumption off, as WithMaxAttempts(1)
// does.
//
// A body is resumed only when that is provably safe; the package
// documentation says when.
func WithResumeLimit(n int) Option {
	if n < 1 {
		panic("retryhttp: WithResumeLimit: limit must be at least 1 (WithoutResume turns resumption off), got " + strconv.Itoa(n))
	}
	return func(t *Transport) { t.resumeLimit = n }
}

// WithStallTimeout sets how long a read of a resumable response body may
// wait without receiving a byte before the body is treated as cut, and
// resumed: the read waits at least d and at most 1.25·d. The same bound
// applies to a resume's wait for its response headers. Only a body that
// may be resumed is watched, and only while the caller waits in Read: a
// caller that takes its time between reads is not stalled, and a body that
// cannot be resumed (a stream of server-sent events, say) may stay idle
// for as long as its server likes. The default is 10 s; 0 turns stall
// detection off, leaving cuts and resets resumed.
func WithStallTimeout(d time.Duration) Option {
	if d < 0 {
		panic("retryhttp: WithStallTimeout: negative duration " + d.String())
	}
	return func(t *Transport) { t.stallTimeout = d }
}

// NoResume returns a copy of ctx under which response bodies are not
// resumed, as WithoutResume does for a whole Transport: for a caller that
// resumes by itself (an SDK's download manager), or that would rather see
// the failure. NoRetry turns resumption off too.
func NoResume(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.noResume = true })
}

// ErrStalled is the error of a response body that received no byte for the
// stall timeout (WithStallTimeout) while the caller waited in Read. It
// reports itself a timeout, as a net.Error does, so that classifiers retry
// it as they retry other timeouts; a *ResumeError wraps it when the
// resumes of a stalled body end.
var ErrStalled error = stalledError{}

type stalledError struct{}

func (stalledError) Error() string   { return "retryhttp: response body stalled" }
func (stalledError) Timeout() bool   { return true }
func (stalledError) Temporary() bool { return true }

// A ResumeReason says why a response body that failed after its headers
// was not resumed, or how its resumption failed. Its value is a short
// phrase, the one ResumeError's message gives.
type ResumeReason string

// Why a body is not resumed at all, although its response showed range
// support (Accept-Ranges: bytes, or a 206): resuming it could deliver
// bytes that do not belong to it.
const (
	// ResumeMethod: the request was not a GET without a body. Range
	// requests are defined for GET alone (RFC 9110, section 14.2), and
	// any other method would be sent, and run, again.
	ResumeMethod ResumeReason = "request is not a GET without a body"
	// ResumeDecoded: the transport decoded the body for the caller
	// (Response.Uncompressed): its offsets are not the server's.
	ResumeDecoded ResumeReason = "body was decoded by the transport"
	// ResumeUnknownLength: the response gave no length (no
	// Content-Length, or a 206 without a single Content-Range).
	ResumeUnknownLength ResumeReason = "body length unknown"
	// ResumeWeakValidator: the response's ETag is weak (W/"..."): it may
	// name other bytes, and If-Range refuses it (RFC 9110, section
	// 13.1.5).
	ResumeWeakValidator ResumeReason = "entity tag is weak"
	// ResumeNoValidator: the response had no ETag, and no Last-Modified
	// that is strong: at least a second before its Date (RFC 9110,
	// section 8.8.2.2). Nothing could tell its rest from another's. An
	// empty entity tag ("") counts as none: valid by the grammar, it is
	// what a server sends that gives every representation the same tag.
	ResumeNoValidator ResumeReason = "no strong validator"
	// ResumeBadValidator: the response's ETag is not an entity tag by RFC
	// 9110's grammar (a quoted string of visible characters), or the
	// response has more than one ETag or Last-Modified field: no single
	// validator names its bytes.
	ResumeBadValidator ResumeReason = "validator is malformed or repeated"
	// ResumeSignedRange: the request carries a signature that covers its
	// Range header (AWS Signature Version 4's SignedHeaders, in the
	// Authorization header or a presigned URL, or Google's; Azure's Shared
	// Key, which signs Range even when it is absent; an HTTP Message
	// Signature, RFC 9421, over "range"): a request for the rest would
	// fail to verify.
	ResumeSignedRange ResumeReason = "Range header is signed"
)

// How a resumption failed: the caller's read ends, and no byte from the
// failed resume reaches it.
const (
	// ResumeChanged: the server answered the request for the rest with
	// another representation: a 200 (its If-Range did not match), or a
	// 206 with another validator, complete length or content coding.
	ResumeChanged ResumeReason = "representation changed"
	// ResumeMisaligned: the server answered with a 206 that does not
	// continue the body: a Content-Range that does not start where the
	// caller is or end where the body does, several ranges, or a length
	// that disagrees with its range.
	ResumeMisaligned ResumeReason = "partial response does not continue the body"
	// ResumeRefused: the server answered the request for the rest with a
	// status that is not retried (a 403 for a signature, a 416), given in
	// StatusCode.
	ResumeRefused ResumeReason = "request for the rest refused"
	// ResumeFailed: the request for the rest failed with an error that is
	// not retried (a TLS error, the request's context done).
	ResumeFailed ResumeReason = "request for the rest failed"
	// ResumeGaveUp: the resumes ended, for the reason in GiveUp: the
	// resume limit, the budget, the deadline, the context.
	ResumeGaveUp ResumeReason = "resumes given up"
)

// What the end of a resumable body showed.
const (
	// ResumeWrongLength: the body's bytes, joined across resumes, are
	// more or fewer than its Content-Length (or Content-Range) announced.
	ResumeWrongLength ResumeReason = "body length differs from the announced length"
	// ResumeDigestMismatch: the body, joined across resumes, does not
	// match the response's Repr-Digest (RFC 9530; sha-256 or sha-512).
	ResumeDigestMismatch ResumeReason = "Repr-Digest does not match the body"
)

// A ResumeError is the error of a read of a response body that failed
// after its headers and could not be made whole: a body that may not be
// resumed, a resume that failed, or a joined body whose length or digest is
// wrong. Every byte the caller read before it is the body's; none after.
//
// Unwrap returns the error that cut the body, when there is one, so that
// errors.Is(err, io.ErrUnexpectedEOF) and the like hold as they would
// without resumption.
type ResumeError struct {
	// Reason says what went wrong.
	Reason ResumeReason
	// GiveUp says why the resumes ended, when Reason is ResumeGaveUp.
	GiveUp GiveUpReason
	// Offset is how many bytes of the body the caller had received.
	Offset int64
	// Resumes is how many requests for the rest of the body were sent.
	Resumes int
	// StatusCode is the status of the last answer to a request for the
	// rest, 0 when none answered.
	StatusCode int
	// Err is the error that cut the body, joined with the last resume's
	// error when that failed with one; nil for ResumeWrongLength and
	// ResumeDigestMismatch found at the end of an intact read.
	Err error
}

// Error describes the failure: the reason, where, and the cause.
func (e *ResumeError) Error() string {
	var b strings.Builder
	if e.Reason == ResumeWrongLength || e.Reason == ResumeDigestMismatch {
		b.WriteString("retryhttp: response body wrong at byte ")
	} else {
		b.WriteString("retryhttp: response body not resumed at byte ")
	}
	b.WriteString(strconv.FormatInt(e.Offset, 10))
	b.WriteString(": ")
	b.WriteString(string(e.Reason))
	if e.GiveUp != "" {
		b.WriteString(" (" + string(e.GiveUp) + ")")
	}
	if e.StatusCode != 0 {
		b.WriteString(" (status " + strconv.Itoa(e.StatusCode) + ")")
	}
	if e.Resumes > 0 {
		b.WriteString(" after " + strconv.Itoa(e.Resumes) + " resumes")
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the error that cut the body, if any.
func (e *ResumeError) Unwrap() error { return e.Err }

// Timeout reports whether the body failed by a timeout (a stall, a
// deadline), as net.Error does.
func (e *ResumeError) Timeout() bool { return isTimeout(e.Err) }

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
		return acceptsRanges(resp.Header["Accept-Ranges"])
	case http.StatusPartialContent:
		return true
	}
	return false
}

// acceptsRanges reports whether an Accept-Ranges field lists "bytes".
func acceptsRanges(values []string) bool {
	for _, v := range values {
		// v == "bytes" as nearly every server says it.
		if v == "bytes" || hasToken(v, ",", "bytes") {
			return true
		}
	}
	return false
}

// hasToken reports whether list, items separated by sep, holds token, in
// any case and with optional whitespace around it.
func hasToken(list, sep, token string) bool {
	for list != "" {
		var item string
		item, list, _ = strings.Cut(list, sep)
		if strings.EqualFold(wire.TrimOWS(item), token) {
			return true
		}
	}
	return false
}

// A representation is what a resumable body's first response said of the
// bytes it carries, against which every part that continues it is checked.
type representation struct {
	start     int64  // the body's first byte in the representation: 0, or where a 206 began
	length    int64  // the body's length
	complete  int64  // the representation's length, -1 when a 206 said "*"
	validator string // the strong ETag, or else the strong Last-Modified
	byETag    bool   // validator is an ETag
	encoding  string // the Content-Encoding
	full      bool   // the body is the whole representation (a 200)
}

// describe reads the representation of resp, the response to req, and
// returns why its body may not be resumed, "" when it may.
func describe(req *http.Request, resp *http.Response) (representation, ResumeReason) {
	var r representation
	if (req.Method != "" && req.Method != http.MethodGet) || (req.Body != nil && req.Body != http.NoBody) {
		return r, ResumeMethod
	}
	if resp.Uncompressed {
		return r, ResumeDecoded
	}
	h := resp.Header
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength <= 0 {
			return r, ResumeUnknownLength
		}
		r.length, r.complete, r.full = resp.ContentLength, resp.ContentLength, true
	case http.StatusPartialContent:
		cr, once := wire.OnlyValue(h, "Content-Range")
		first, last, complete, ok := parseContentRange(cr)
		// last-first+1 cannot overflow: parseContentRange holds last
		// below math.MaxInt64.
		if !once || !ok || multipart(h.Get("Content-Type")) || (resp.ContentLength >= 0 && resp.ContentLength != last-first+1) {
			return r, ResumeUnknownLength
		}
		r.start, r.length, r.complete = first, last-first+1, complete
	default:
		return r, ResumeUnknownLength
	}
	r.encoding = contentCoding(h)
	etag, once := wire.OnlyValue(h, "Etag")
	lm, lmOnce := wire.OnlyValue(h, "Last-Modified")
	switch kind := entityTag(etag); {
	case !once:
		return r, ResumeBadValidator
	case kind == tagStrong:
		r.validator, r.byETag = etag, true
	case kind == tagWeak:
		return r, ResumeWeakValidator
	case kind == tagMalformed:
		return r, ResumeBadValidator
	case !lmOnce:
		return r, ResumeBadValidator
	case strongDate(lm, h.Get("Date")):
		// No ETag, or the empty one: the strong Last-Modified validates.
		r.validator = lm
	default:
		return r, ResumeNoValidator
	}
	if signedRange(req) {
		return r, ResumeSignedRange
	}
	return r, ""
}

// An entity tag's kind, as entityTag reads it.
type tagKind uint8

const (
	tagNone      tagKind = iota // no ETag, or the empty strong one ""
	tagStrong                   // "..."
	tagWeak                     // W/"..."
	tagMalformed                // anything else
)

// entityTag tells what an ETag value is by RFC 9110's grammar (section
// 8.8.3): an optional W/ and a quoted run of etagc, the visible characters
// other than the double quote, and bytes 0x80 and above. The empty strong
// tag "" is no validator: a server that sends it gives every representation
// the same tag, and a resume pinned to it would be pinned to nothing.
func entityTag(v string) tagKind {
	if v == "" {
		return tagNone
	}
	kind := tagStrong
	if rest, ok := strings.CutPrefix(v, "W/"); ok {
		kind, v = tagWeak, rest
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return tagMalformed
	}
	for i := 1; i < len(v)-1; i++ {
		if c := v[i]; c < 0x21 || c == '"' || c == 0x7f {
			return tagMalformed
		}
	}
	if kind == tagStrong && len(v) == 2 {
		return tagNone
	}
	return kind
}

// strongDate reports whether a Last-Modified value is a strong validator
// by RFC 9110, section 8.8.2.2: the response's Date, from the same server's
// clock, is at least a second later, so that the representation cannot have
// changed twice within the second that Last-Modified names.
func strongDate(lastModified, date string) bool {
	lm, err := http.ParseTime(lastModified)
	if err != nil {
		return false
	}
	d, err := http.ParseTime(date)
	return err == nil && d.Sub(lm) >= time.Second
}

// contentCoding returns the codings of a response's Content-Encoding fields,
// all of them, so that a second field cannot hide behind the first.
func contentCoding(h http.Header) string {
	return strings.Join(h["Content-Encoding"], ", ")
}

// multipart reports whether a Content-Type is multipart/byteranges, the
// form of a 206 with several ranges.
func multipart(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return strings.HasPrefix(mt, "multipart/")
}

// parseContentRange parses a Content-Range of a 206, "bytes first-last/complete"
// with complete a length or "*" (returned as -1). It holds last below
// math.MaxInt64, so that the length and every offset within the range are
// int64s.
func parseContentRange(v string) (first, last, complete int64, ok bool) {
	unit, rest, found := strings.Cut(wire.TrimOWS(v), " ")
	if !found || !strings.EqualFold(unit, "bytes") {
		return 0, 0, 0, false
	}
	span, total, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, 0, false
	}
	first, okA := wire.Digits(a)
	last, okB := wire.Digits(b)
	// digits saturates at math.MaxInt64; a last byte there (or past it)
	// leaves no int64 for the length, last-first+1, nor for the offset
	// after it, and no body that long can exist.
	if !okA || !okB || last < first || last == math.MaxInt64 {
		return 0, 0, 0, false
	}
	complete = -1
	if total != "*" {
		if complete, ok = wire.Digits(total); !ok || complete <= last {
			return 0, 0, 0, false
		}
	}
	return first, last, complete, true
}

// signedRange reports whether req carries a signature that covers its Range
// header, so that a request for the rest of the body, with a Range of its
// own, would fail to verify: AWS Signature Version 4 (and 4A) and Google's
// V4 signing, whose SignedHeaders list, in the Authorization header or the
// query of a presigned URL, names the headers signed; Azure's Shared Key,
// whose string to sign holds the Range header, empty or not (Shared Key
// Lite's does not); and HTTP Message Signatures (RFC 9421), whose
// Signature-Input lists the components signed.
func signedRange(req *http.Request) bool {
	h := req.Header
	for _, auth := range h["Authorization"] {
		if strings.HasPrefix(auth, "SharedKey ") {
			return true
		}
		if _, list, ok := strings.Cut(auth, "SignedHeaders="); ok {
			list, _, _ = strings.Cut(list, ",")
			if listsRange(list) {
				return true
			}
		}
	}
	if q := req.URL.RawQuery; strings.Contains(q, "SignedHeaders") {
		// Read by hand: url.ParseQuery drops a pair with a raw ";", as an
		// unescaped list of signed headers has.
		for q != "" {
			var pair string
			pair, q, _ = strings.Cut(q, "&")
			name, value, _ := strings.Cut(pair, "=")
			if strings.EqualFold(name, "X-Amz-SignedHeaders") || strings.EqualFold(name, "X-Goog-SignedHeaders") {
				if v, err := url.QueryUnescape(value); err == nil && listsRange(v) {
					return true
				}
			}
		}
	}
	for _, input := range h["Signature-Input"] {
		if strings.Contains(strings.ToLower(input), `"range"`) {
			return true
		}
	}
	return false
}

// listsRange reports whether a SignedHeaders list ("host;range;x-amz-date")
// names the Range header.
func listsRange(list string) bool {
	return hasToken(list, ";", "range")
}

// continues checks that resp, a 206 answering the request for the rest of
// the body from offset off, continues the body r describes, and returns why
// not, "" when it does.
func (r *representation) continues(resp *http.Response, off int64) ResumeReason {
	h := resp.Header
	if resp.Uncompressed || contentCoding(h) != r.encoding {
		return ResumeChanged
	}
	key := "Last-Modified"
	if r.byETag {
		key = "Etag"
	}
	if v, once := wire.OnlyValue(h, key); !once || v != r.validator {
		// A server that ignores If-Range (some do) answers ranges of a
		// representation that has changed: only the validator tells,
		// and a validator given twice tells nothing.
		return ResumeChanged
	}
	cr, once := wire.OnlyValue(h, "Content-Range")
	first, last, complete, ok := parseContentRange(cr)
	switch {
	case !once || !ok || multipart(h.Get("Content-Type")):
		return ResumeMisaligned
	case complete != r.complete:
		return ResumeChanged
	case first != r.start+off || last != r.start+r.length-1:
		return ResumeMisaligned
	case resp.ContentLength >= 0 && resp.ContentLength != last-first+1:
		return ResumeMisaligned
	}
	return ""
}

// rangeHeader returns the header of the request for the rest of the body
// from offset off, made from h, the header of the request that produced it:
// Range from off to the body's end (open-ended for a whole
// representation), If-Range with the validator, and, unless the caller
// chose a coding, Accept-Encoding: identity, so that no transport decodes
// the rest.
func (r *representation) rangeHeader(h http.Header, off int64) http.Header {
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	spec := "bytes=" + strconv.FormatInt(r.start+off, 10) + "-"
	if !r.full {
		spec += strconv.FormatInt(r.start+r.length-1, 10)
	}
	wire.SetField(h, "Range", spec)
	wire.SetField(h, "If-Range", r.validator)
	if !wire.HasField(h, "Accept-Encoding") {
		h["Accept-Encoding"] = []string{"identity"}
	}
	return h
}
