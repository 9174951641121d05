package retryhttp

import (
	"context"
	"net/http"
)

// callOptions are the overrides a caller gives one request through its
// context: Resendable, MaxAttempts, NoHedge and NoResume.
type callOptions struct {
	resendable  bool
	noHedge     bool
	noResume    bool
	maxAttempts int // 0: the Transport's
}

type callKey struct{}

func callOptionsFrom(ctx context.Context) callOptions {
	co, _ := ctx.Value(callKey{}).(callOptions)
	return co
}

func withCallOptions(ctx context.Context, change func(*callOptions)) context.Context {
	if ctx == nil {
		panic("retryhttp: nil Context")
	}
	co := callOptionsFrom(ctx)
	change(&co)
	return context.WithValue(ctx, callKey{}, co)
}

// Resendable returns a copy of ctx under which requests are safe to send
// more than once, as idempotent ones are: a read sent as a POST (an AWS
// JSON-protocol Get, a GraphQL query, a search), or a write the server
// deduplicates by some means of its own. Pass it to an SDK call, whose
// requests carry the call's context:
//
//	out, err := db.GetItem(retryhttp.Resendable(ctx), in)
//
// The other rules still apply: the attempts, the budget, the classifier,
// and a body without GetBody is resent only when the first attempt sent it
// whole within the buffer limit. Overrides given through the same context
// add up.
func Resendable(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.resendable = true })
}

// MaxAttempts returns a copy of ctx under which requests get at most n
// attempts, the first included, whatever the Transport's WithMaxAttempts
// says. An n below 1 counts as 1. MaxAttempts(ctx, 1) is for a call that is
// retried at another layer, or whose caller would rather fail fast: its
// response body is not resumed either.
func MaxAttempts(ctx context.Context, n int) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.maxAttempts = max(n, 1) })
}

// WithResendable declares which requests are safe to send more than once
// although their method is not idempotent and they carry no idempotency
// key, for users who know their API: fn reports true for those. For an AWS
// SDK client, every operation may be resent (the SDK's own retryer resends
// them all); for GraphQL, queries but not mutations. Such requests are
// retried as idempotent ones are, under the same attempts, budget,
// classifier and body rules. fn is called at most once per request, on the
// goroutine making it, with the caller's request, which it must not modify
// or read the body of; it must be safe for concurrent use. Resendable marks
// a single call instead.
func WithResendable(fn func(*http.Request) bool) Option {
	if fn == nil {
		panic("retryhttp: WithResendable: nil function")
	}
	return func(t *Transport) { t.resendable = fn }
}
