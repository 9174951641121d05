// Package classify decides which outcomes of an HTTP attempt are worth
// retrying.
//
// A Classifier looks at one attempt (the request as sent, and the response
// or the error the transport returned) and gives a Verdict: Retry, DontRetry
// or Abstain, with facets that price and pace the retry (Throttle, Timeout,
// RetryAfter). First asks several classifiers in turn, and the first that
// does not abstain decides. Default is what a retryhttp Transport uses: it
// retries 408, 429 and most 5xx responses, a 421 once, on a new connection,
// and the transport errors that are
// transient by type, honours a server's X-Should-Retry, and never retries
// once the caller has given up. To adjust it, put your own classifiers in
// front:
//
//	retryhttp.New(retryhttp.WithClassifier(classify.First(classify.Statuses(classify.DontRetry, 500), classify.Default())))
//
// A classifier that reads a response body does so through Peek, which
// reads a bounded prefix in bounded time and leaves the body whole for the
// caller. The vendor packages (awsretry, githubretry, googleretry) read the
// error documents of those APIs this way.
package classify
