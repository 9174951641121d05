// Package resume configures how a retryhttp.Transport resumes a response
// body that fails after its headers (the connection closed or reset, an
// HTTP/2 stream reset, bytes that stop coming), and defines the error its
// reader gets when the body cannot be made whole. A body can be resumed
// when its response, to a GET without a body, sends Accept-Ranges: bytes
// (or is a 206), a length (a Content-Length, or a 206's single
// Content-Range), and a strong validator: a strong ETag, or a Last-Modified
// at least a second before the response's Date. Resumption is on by
// default. A read that fails for good ends in an *Error whose Reason says
// why and whose Offset counts the bytes the caller received, every one of
// them the body's. Options go to retryhttp.WithResume:
//
//	client := &http.Client{Transport: retryhttp.New(retryhttp.WithResume(resume.Limit(3)))}
//
// # How a body is resumed
//
// The caller's Read blocks while the Transport asks for the rest (Range:
// bytes=N-, with If-Range carrying the first response's validator), checks
// that the answer is a 206 that continues the same representation (a
// Content-Range that starts at N and ends where the body does, the same
// complete length, validator and content coding, which it compares itself,
// since some servers ignore If-Range), and reads on: the caller sees every
// byte once, in order. A body is never spliced from two representations
// nor restarted under bytes already delivered; a resume that cannot
// continue the body (a 200, another validator or length, a refusal) ends
// the read with an *Error.
//
// # What is not resumed
//
// A weak ETag (WeakValidator), a malformed or repeated validator
// (BadValidator; the empty ETag "" counts as none), no strong validator
// (NoValidator), no length (UnknownLength), a body net/http decoded
// (Response.Uncompressed: Decoded), a request whose signature covers its
// Range header (AWS Signature Version 4, Google's V4 signing, Azure Shared
// Key, RFC 9421 signatures: SignedRange) and methods other than GET
// (Method) are not resumed: the failure of such a body ends the read with
// an *Error that says why and wraps the original error, and the give-up
// hooks see retryhttp.GiveUpNotResumable. A response that shows no range
// support is passed through untouched, at no cost, and not watched for
// stalls.
//
// # The whole is checked
//
// The joined body must have its announced length (WrongLength), and, when
// the response carries a Repr-Digest (RFC 9530, sha-256 or sha-512), match
// it (DigestMismatch): checked whether or not the body was resumed, by the
// Read that would complete the body, which on a mismatch returns no byte
// and an *Error, so that a reader that stops at the announced length
// (io.ReadFull, io.CopyN) still sees it. The bytes of earlier Reads reached
// the caller unverified: the digest covers the whole, and holding the whole
// back is memory without bound.
//
// # Each resume is a retry
//
// A resume waits its backoff, is paid from the retry budget (a host that
// cuts every body gets about 100 resumes from a full bucket), stays within
// the request's context, is reported to retryhttp.WithOnRetry
// (RetryEvent.Resume and Offset) and the log, and goes, through the
// base.Dialer, to an address other than the one that failed. A body
// gets at most Limit resumes. retryhttp.WithoutResume turns resumption off
// for a Transport, retryhttp.NoResume and retryhttp.MaxAttempts(ctx, 1) for
// one call, and so does retryhttp.WithMaxAttempts(1). Closing the body stops
// everything, whenever it is called.
//
// # Stalls
//
// A Read of a resumable body that receives no byte for the stall timeout
// (StallTimeout) is taken for a cut, and resumed, with ErrStalled as its
// cause: one timer per body, no goroutine, and only while the caller waits
// in Read. Bodies that cannot be resumed are never watched: a stream of
// events may sit idle as long as its server likes.
//
// # Defaults
//
// At most 10 resumes per body (Limit), a stall after 10 s (StallTimeout).
// Ten resumes let a long download survive a flaky path, and report a body
// that keeps failing; the budget bounds resumes across bodies. 10 s
// without a byte is more than a healthy TCP connection goes silent even
// when it loses a segment several times in a row (Linux doubles its
// retransmission timeout from at least 200 ms: five losses in a row on a
// short path are silent for 6.2 s, three on a path whose timeout is 1 s
// for 7 s), and far less than the quarter of an hour Linux takes to fail a
// connection that is gone; resuming a body that was only slow costs one
// request.
//
// The [guide] has the table of what is resumed, and what was measured.
//
// [guide]: https://github.com/retryhttp/retryhttp/blob/main/docs/resume.md
package resume
