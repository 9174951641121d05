// Package deadline names the request headers that carry a caller's deadline
// from one service to the next.
//
// # Propagating a deadline
//
// A caller that stops waiting for an answer leaves the services below it
// working, and retrying, for an answer no one will read. Propagating the
// deadline tells each service how long its caller will wait: the client
// sends, with each attempt, the time left before its request's deadline,
// and the server makes that the deadline of the incoming request's
// context, so that it and its own calls stop when the caller stops
// waiting, and pass on what is left of the time. The time is relative (the
// time left when the attempt is sent), so the clocks of client and server
// need not agree, and each attempt carries its own: a retry, sent later,
// carries less.
//
// # The formats
//
// A Format is the header the time travels in, and its name says how it is
// written: GRPCTimeout (gRPC's grpc-timeout, "250m"), EnvoyTimeout
// (Envoy's x-envoy-expected-rq-timeout-ms) and ConnectTimeout (Connect's
// Connect-Timeout-Ms) are the formats users meet; Milliseconds names a
// header of your own, in milliseconds.
//
// # Use
//
// The client sends the time left with each attempt of its Transport:
//
//	retryhttp.New(retryhttp.WithDeadlineHeader(deadline.GRPCTimeout))
//
// and the server reads it on each incoming request:
//
//	server.Handler(mux, server.Deadline(deadline.GRPCTimeout))
//
// Sent reads, in a base under the Transport, the time an attempt carries.
// The [deadlines guide] says what each side does at the edges: an attempt
// with under 1 ms left, an expired or malformed incoming deadline.
//
// [deadlines guide]: https://github.com/retryhttp/retryhttp/blob/main/docs/deadlines.md
package deadline
