package resume

import (
	"errors"
	"strconv"
	"strings"

	"github.com/retryhttp/retryhttp/internal/giveup"
)

// ErrStalled is the error of a response body that received no byte for the
// stall timeout (StallTimeout) while the caller waited in Read. It reports
// itself a timeout, as a net.Error does, so that classifiers retry it as
// they retry other timeouts; an *Error wraps it when the resumes of a
// stalled body end.
var ErrStalled error = stalledError{}

type stalledError struct{}

func (stalledError) Error() string   { return "retryhttp: response body stalled" }
func (stalledError) Timeout() bool   { return true }
func (stalledError) Temporary() bool { return true }

// A Reason says why a response body that failed after its headers was not
// resumed, or how its resumption failed. Its value is a short phrase, the
// one Error's message gives.
type Reason string

// Why a body is not resumed at all, although its response showed range
// support (Accept-Ranges: bytes, or a 206): resuming it could deliver
// bytes that do not belong to it.
const (
	// Method: the request was not a GET without a body. Range requests
	// are defined for GET alone (RFC 9110, section 14.2), and any other
	// method would be sent, and run, again.
	Method Reason = "request is not a GET without a body"
	// Decoded: the transport decoded the body for the caller
	// (Response.Uncompressed): its offsets are not the server's.
	Decoded Reason = "body was decoded by the transport"
	// UnknownLength: the response gave no length (no Content-Length, or a
	// 206 without a single Content-Range).
	UnknownLength Reason = "body length unknown"
	// WeakValidator: the response's ETag is weak (W/"..."): it may name
	// other bytes, and If-Range refuses it (RFC 9110, section 13.1.5).
	WeakValidator Reason = "entity tag is weak"
	// NoValidator: the response had no ETag, and no Last-Modified that is
	// strong: at least a second before its Date (RFC 9110, section
	// 8.8.2.2). Nothing could tell its rest from another's. An empty
	// entity tag ("") counts as none: valid by the grammar, it is what a
	// server sends that gives every representation the same tag.
	NoValidator Reason = "no strong validator"
	// BadValidator: the response's ETag is not an entity tag by RFC 9110's
	// grammar (a quoted string of visible characters), or the response has
	// more than one ETag or Last-Modified field: no single validator names
	// its bytes.
	BadValidator Reason = "validator is malformed or repeated"
	// SignedRange: the request carries a signature that covers its Range
	// header (AWS Signature Version 4's SignedHeaders, in the
	// Authorization header or a presigned URL, or Google's; Azure's Shared
	// Key, which signs Range even when it is absent; an HTTP Message
	// Signature, RFC 9421, over "range"): a request for the rest would
	// fail to verify.
	SignedRange Reason = "Range header is signed"
)

// How a resumption failed: the caller's read ends, and no byte from the
// failed resume reaches it.
const (
	// Changed: the server answered the request for the rest with another
	// representation: a 200 (its If-Range did not match), or a 206 with
	// another validator, complete length or content coding.
	Changed Reason = "representation changed"
	// Misaligned: the server answered with a 206 that does not continue
	// the body: a Content-Range that does not start where the caller is or
	// end where the body does, several ranges, or a length that disagrees
	// with its range.
	Misaligned Reason = "partial response does not continue the body"
	// Refused: the server answered the request for the rest with a status
	// that is not retried (a 403 for a signature, a 416), given in
	// StatusCode.
	Refused Reason = "request for the rest refused"
	// Failed: the request for the rest failed with an error that is not
	// retried (a TLS error, the request's context done).
	Failed Reason = "request for the rest failed"
	// GaveUp: the resumes ended, for the reason in GiveUp: the resume
	// limit, the budget, the deadline, the context.
	GaveUp Reason = "resumes given up"
)

// What the end of a resumable body showed.
const (
	// WrongLength: the body's bytes, joined across resumes, are more or
	// fewer than its Content-Length (or Content-Range) announced.
	WrongLength Reason = "body length differs from the announced length"
	// DigestMismatch: the body, joined across resumes, does not match the
	// response's Repr-Digest (RFC 9530; sha-256 or sha-512).
	DigestMismatch Reason = "Repr-Digest does not match the body"
)

// An Error is the error of a read of a response body that failed after its
// headers and could not be made whole: a body that may not be resumed, a
// resume that failed, or a joined body whose length or digest is wrong.
// Every byte the caller read before it is the body's; none after.
//
// Unwrap returns the error that cut the body, when there is one, so that
// errors.Is(err, io.ErrUnexpectedEOF) and the like hold as they would
// without resumption.
type Error struct {
	// Reason says what went wrong.
	Reason Reason
	// GiveUp says why the resumes ended, when Reason is GaveUp: a
	// retryhttp.GiveUpReason (GiveUpResumeLimit, GiveUpBudgetExhausted,
	// GiveUpDeadline, GiveUpCanceled).
	GiveUp giveup.Reason
	// Offset is how many bytes of the body the caller had received.
	Offset int64
	// Resumes is how many requests for the rest of the body were sent.
	Resumes int
	// StatusCode is the status of the last answer to a request for the
	// rest, 0 when none answered.
	StatusCode int
	// Err is the error that cut the body, joined with the last resume's
	// error when that failed with one; nil for WrongLength and
	// DigestMismatch found at the end of an intact read.
	Err error
}

// Error describes the failure: the reason, where, and the cause.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Reason == WrongLength || e.Reason == DigestMismatch {
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
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the body failed by a timeout (a stall, a
// deadline), as net.Error does.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}
