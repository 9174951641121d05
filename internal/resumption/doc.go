// Package resumption decides whether a response body cut after its headers
// can be continued, and checks each part that continues it. Given the
// request and the first response, it reads what the response says of its
// representation (validators, ranges, coding, Repr-Digest); given each
// answer to a range request and how far the caller has read, it says
// whether that answer continues the same bytes, and it finds a read that
// waits too long for the server (a stall). It never resumes a
// representation it cannot prove the same, never sends, never sleeps and
// never logs: the Transport's loop sends each range request as a retry and
// reports it.
package resumption
