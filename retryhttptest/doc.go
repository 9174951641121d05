// Package retryhttptest provides local HTTP servers and an in-memory transport
// that misbehave on purpose, so that tests can prove how a client retries:
// how many attempts a request took, how many times the server executed it,
// and what arrived when.
//
// Most tests want NewServer, shaped like net/http/httptest's:
//
//	srv := retryhttptest.NewServer(handler, retryhttptest.First(2, retryhttptest.Status(503)))
//	defer srv.Close()
//	client := &http.Client{Transport: retryhttp.New()}
//	resp, err := client.Get(srv.URL)
//	// srv.Requests()[0].Attempts == 3, Executions == 1
//
// The guide [Testing your own retries] shows the kit at work.
//
// # Faults
//
// A Fault says what each attempt gets: the handler's response (Pass), a
// canned one (Status, RetryAfter, RetryAfterDate, Respond), or a
// misbehaviour: a Delay before the headers, a Hang until the client gives
// up, a connection reset after the handler ran (ResetAfterRead), a
// connection closed before the body was read (CloseBeforeRead), a body cut
// short (Truncate) or streamed slowly (Slow). CloseAfter, ResetAfter and
// StallAfter stream the handler's body and close the connection, reset it,
// or stop sending once a number of its bytes are sent (over HTTP/2 the first
// two reset the stream): the failures a client meets after the headers,
// for testing how it resumes a body. Sequence, First and Chance
// choose among faults by attempt number, and Func by anything else: the
// time, the load, a switch the test flips.
//
// # Logical requests
//
// Attempts that carry the same key are attempts of one logical request, and
// Sequence and First count attempts per logical request, so "fail twice,
// then succeed" holds for each request however many run at once. The key is
// the Idempotency-Key header by default, a header of your choice with
// KeyHeader, or anything with KeyFunc. A request without a key is keyed by
// its method and target.
//
// # Records
//
// Requests returns, for each logical request, its attempts, executions
// (attempts that ran the handler), arrival times, what each attempt got,
// whether its body was the same on every attempt, and how many attempts
// overlapped another of the same request (hedges, where retries follow one
// another). Attempts, Executions,
// Connections and Arrivals give totals. All may be read while requests are
// in flight. Records are kept for the life of the server.
//
// # In front of a real server
//
// NewProxy puts the same faults in front of a server no one wrote for the
// test (a local emulator of a cloud service, a staging deployment): a
// reverse proxy on loopback that forwards each attempt as the client sent
// it, Host and signature headers included, unless its fault answers in the
// upstream's place, and records attempts and executions the same way. An
// attempt the upstream answered counts as executed even when the proxy
// then resets the connection.
//
// # Several instances behind a balancer
//
// NewBalancer starts a TCP balancer on loopback in front of several
// backends, each connection piped to one of them for its life, as a
// Kubernetes Service or a network load balancer does, picked by a seeded
// generator and counted per backend. Make one backend fail (a Server
// answering Status(503)) to prove that a client's retries leave the
// instance that failed them.
//
// # Inside testing/synctest
//
// Real sockets cannot be used inside a synctest bubble. NewTransport
// returns an http.RoundTripper that serves requests in memory, with the
// same faults and records, whose delays take no real time in a bubble.
//
// [Testing your own retries]: https://github.com/retryhttp/retryhttp/blob/main/docs/testing.md
package retryhttptest
