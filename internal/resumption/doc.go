// Package resumption resumes a response body cut after its headers. It is
// given a response that may be resumed, the caller's request, and the
// request's retry machine (Retries), which sends the requests for the rest
// and decides, as for any retry, whether and when each may go. It decides
// whether a cut body can be continued (Describe, Representation), checks
// each part that continues it, and splices the parts so that the caller
// reads one body (Body).
//
// It never resumes a representation it cannot prove the same: a body whose
// request, length or validator leaves any doubt is passed through as it
// is, and an answer that does not continue the body ends the read. It
// never reads past what the caller asks, never hands the caller a byte the
// body did not have, never sleeps and never logs: the retry machine waits
// before each resume and reports each resume and each give-up.
//
// # What continues a body
//
// A body can be resumed when its request is a GET without a body whose
// signature, if any, does not cover Range, and its response (a 200, or a
// 206 of a single range) gives a length and a strong validator: a strong
// ETag, or a Last-Modified at least a second before the response's Date.
// An answer to the request for the rest continues it when it is a 206 of
// exactly the rest, with the same validator, complete length and content
// coding, whether or not the server honoured If-Range.
//
// # What the whole must be
//
// The joined body must have the announced length, and match the response's
// Repr-Digest (sha-256 or sha-512) when it has one: the Read that would
// complete a body that does not returns no byte, and a *resume.Error.
//
// # Stalls
//
// A Read of a body that can be resumed, or a request for its rest waiting
// for its headers, that waits longer than the stall timeout for the server
// counts as cut, with resume.ErrStalled: one timer per body, no goroutine,
// and only while the caller waits.
package resumption
