// Package server is for services that call their own dependencies through
// retryhttp Transports: its Handler, a middleware, keeps the retries of a
// chain of such services at one layer, and carries the caller's deadline
// down the chain.
//
// # Retrying at one layer
//
// When every service in a chain A -> B -> C -> D -> E retries three times,
// a failing E sees 3⁴ = 81 calls for each request to A: each layer
// multiplies the retries of the layers below. Only the layer closest to the
// failure should retry. With Handler around B, C and D, a layer whose
// Transport gave up on its dependency (attempts spent, budget empty, the
// dependency said not to retry, no time left) and which answers with a
// status worth retrying (408, 429 or 5xx) adds "X-Should-Retry: false" to
// its response. The Transport of the layer above honours that signal, as
// does any client that follows the convention, so E sees only the attempts
// of D. A dependency that adaptive throttling refused a request to is down
// as far as this layer knows: a 5xx the handler then answers with becomes
// 503, with the signal.
//
// The Transport learns which incoming request it serves from the request's
// context: make outgoing requests with the incoming request's context, as
// http.NewRequestWithContext(r.Context(), ...) does.
//
// # Deadlines
//
// With Deadline, the deadline a caller sends in a header (package deadline
// names the formats: gRPC's, Envoy's, Connect's or your own) becomes the
// incoming request's, less a margin for the way back (DeadlineMargin, 2 ms
// by default), never later than the server's own and at most MaxDeadline
// away (a minute by default). The handler and its calls stop when the
// caller stops waiting, and a Transport with retryhttp.WithDeadlineHeader
// sends what is left on to the next layer. A request whose deadline has
// passed when it arrives is answered at once with 504 and the signal;
// malformed values are ignored and reported to OnMalformedDeadline.
//
// # Use
//
// As middleware, in one line:
//
//	http.ListenAndServe(addr, server.Handler(mux))
//
// and, to carry deadlines too:
//
//	server.Handler(mux, server.Deadline(deadline.GRPCTimeout))
//
// The [chains guide] and the [deadlines guide] have the measurements.
//
// [chains guide]: https://github.com/retryhttp/retryhttp/blob/main/docs/chains.md
// [deadlines guide]: https://github.com/retryhttp/retryhttp/blob/main/docs/deadlines.md
package server
