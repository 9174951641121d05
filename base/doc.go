// Package base is for authors of base transports: the http.RoundTripper a
// retryhttp Transport sends each of its attempts through (retryhttp.WithBase;
// by default an *http.Transport of go-cleanhttp's settings).
//
// # What a base sees
//
// A Transport sends every attempt of a request, retries and hedges
// included, through its base, each with a context of its own. Attempt
// reads the attempt's number from it (1 for the first, 2 for the first
// retry), and Peer the remote address of the connection that carried it,
// so that a base can log, count or trace each attempt: module otelretry
// gives each attempt's span its number and peer this way. deadline.Sent
// reads the time left the attempt carries in its deadline headers.
//
// # Where a retry goes
//
// A Dialer dials a host name's addresses in the resolver's order, except
// that a retry dials last the addresses at which the request's earlier
// attempts failed, so that it reaches another instance of the service. A
// Transport's default base dials with one; give it to an *http.Transport of
// your own in one line:
//
//	t.DialContext = base.NewDialer().DialContext
//
// The [decisions guide] says where a retry goes, and why.
//
// [decisions guide]: https://github.com/retryhttp/retryhttp/blob/main/docs/decisions.md#where-a-retry-goes
package base
