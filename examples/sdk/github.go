package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/go-github/v84/github"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/githubretry"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// runGitHub makes three calls through go-github and retryhttp, each to a
// fake of the GitHub REST API behind a server that misbehaves in one way,
// and writes to w what the client saw, each retry, and what the server
// counted. opts are added to the Transport's.
//
// go-github makes one attempt per call: it has no retries of its own to
// turn off (leave its SleepUntilPrimaryRateLimitResetWhenRateLimited
// context value unset). GitHub answers a request over a rate limit with a
// 403, which retryhttp's default rules treat as final;
// githubretry.Classifier tells a rate limit from a refusal by its
// headers.
func runGitHub(w io.Writer, opts ...retryhttp.Option) error {
	tr := retryhttp.New(append([]retryhttp.Option{
		retryhttp.WithClassifier(classify.First(githubretry.Classifier(), classify.Default())),
		printRetries(w),
	}, opts...)...)
	defer tr.CloseIdleConnections()
	httpClient := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx := context.Background()

	api := newFakeGitHub()
	var attempts int
	fmt.Fprintln(w, "go-github over retryhttp, against a local fake of the GitHub REST API.")

	// 1. A gateway error.
	srv := retryhttptest.NewServer(api, retryhttptest.First(1, retryhttptest.Status(http.StatusBadGateway)))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "1. Get the repository retryhttp/retryhttp: GET /repos/retryhttp/retryhttp.")
	fmt.Fprintln(w, "   The server answers 502.")
	repo, _, err := newGitHubClient(srv.URL, httpClient).Repositories.Get(ctx, "retryhttp", "retryhttp")
	if err != nil {
		return fmt.Errorf("getting the repository: %w", err)
	}
	fmt.Fprintf(w, "   client: got %s, default branch %s\n", repo.GetFullName(), repo.GetDefaultBranch())
	rec := srv.Requests()[0]
	fmt.Fprintf(w, "   server: %s, handler runs: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	// 2. A secondary rate limit.
	srv = retryhttptest.NewServer(api, retryhttptest.First(1, githubSecondaryRateLimit(1)))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "2. Get it again.")
	fmt.Fprintln(w, "   The server answers 403, a secondary rate limit, with Retry-After: 1.")
	start := time.Now()
	repo, _, err = newGitHubClient(srv.URL, httpClient).Repositories.Get(ctx, "retryhttp", "retryhttp")
	if err != nil {
		return fmt.Errorf("getting the repository again: %w", err)
	}
	fmt.Fprintf(w, "   client: got %s, after waiting at least 1s: %t\n", repo.GetFullName(), time.Since(start) >= time.Second)
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   server: %s, handler runs: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	// 3. A refusal.
	srv = retryhttptest.NewServer(api, githubForbidden())
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "3. Get it with a token that may not.")
	fmt.Fprintln(w, "   The server answers 403 Resource not accessible, with requests remaining.")
	_, _, err = newGitHubClient(srv.URL, httpClient).Repositories.Get(ctx, "retryhttp", "retryhttp")
	var ghErr *github.ErrorResponse
	if !errors.As(err, &ghErr) {
		return fmt.Errorf("getting the repository with a weak token: got %v, want GitHub's error", err)
	}
	fmt.Fprintf(w, "   client: error %d: %s\n", ghErr.Response.StatusCode, ghErr.Message)
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   server: %s, handler runs: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	summary(w, 3, attempts, fmt.Sprintf("repositories served: %d", api.Served()))
	return nil
}

// newGitHubClient returns a go-github client that sends its requests
// through httpClient to the API at baseURL.
func newGitHubClient(baseURL string, httpClient *http.Client) *github.Client {
	c := github.NewClient(httpClient)
	u, err := url.Parse(baseURL + "/")
	if err != nil {
		panic(err)
	}
	c.BaseURL = u
	return c
}
