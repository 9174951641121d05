package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/openai/openai-go"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// oneLayerCalls is how many calls the one-layer demonstration makes to
// each provider, and oneLayerConcurrency how many at once.
const (
	oneLayerCalls       = 1000
	oneLayerConcurrency = 8
)

// runOneLayer shows one retryhttp Transport under four SDKs at once (the
// OpenAI, Anthropic, S3 and GitHub clients), each SDK's own retries off,
// while the OpenAI API answers every request 429: the throttled provider
// spends its own per-host budget and then sees about one request per call,
// and the others are untouched. The providers are local: fakes of the LLM
// APIs shaped as the vendors document them, gofakes3, and a fake of the
// GitHub API.
func runOneLayer(w io.Writer, opts ...retryhttp.Option) error {
	ctx := context.Background()
	var mu sync.Mutex
	retries := map[string]int{}
	tr := retryhttp.New(append([]retryhttp.Option{
		retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Statuses(classify.Retry, http.StatusConflict), classify.Default())),
		retryhttp.WithResendable(llmGeneration),
		// Throttled retries wait from 1 s by default; 10 ms here, so that
		// the demonstration takes seconds.
		retryhttp.WithThrottleBackoff(backoff.Constant(10 * time.Millisecond)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			mu.Lock()
			retries[e.Request.URL.Host]++
			mu.Unlock()
		}),
	}, opts...)...)
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	openAI := retryhttptest.NewServer(fakeOpenAI, openAIError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
		"Rate limit reached for gpt-4o-mini in organization org-demo on requests per min (RPM): Limit 500, Used 500, Requested 1.",
		"Retry-After-Ms", "10"))
	defer openAI.Close()
	claude := retryhttptest.NewServer(fakeAnthropic, retryhttptest.Pass())
	defer claude.Close()
	store, err := newS3Store("photos")
	if err != nil {
		return err
	}
	defer store.Close()
	s3Proxy := retryhttptest.NewProxy(store.URL, retryhttptest.Pass())
	defer s3Proxy.Close()
	gh := retryhttptest.NewServer(newFakeGitHub(), retryhttptest.Pass())
	defer gh.Close()

	oa := newOpenAIClient(openAI.URL+"/v1/", hc)
	an := newAnthropicClient(claude.URL, hc)
	s3c := newS3Client(s3Proxy.URL, hc)
	ghc := newGitHubClient(gh.URL, hc)
	if _, err := newS3Client(store.URL, http.DefaultClient).PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("photos"), Key: aws.String("cat.jpg"), Body: bytes.NewReader(pattern(1 << 10)),
	}); err != nil {
		return err
	}

	providers := []struct {
		name     string
		attempts func() int
		call     func() error
	}{
		{"OpenAI (answers 429 to everything)", openAI.Attempts, func() error {
			_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: openai.ChatModelGPT4oMini, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
			return err
		}},
		{"Anthropic", claude.Attempts, func() error {
			_, err := an.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 64,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}})
			return err
		}},
		{"S3", s3Proxy.Attempts, func() error {
			out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("cat.jpg")})
			if err == nil {
				io.Copy(io.Discard, out.Body)
				out.Body.Close()
			}
			return err
		}},
		{"GitHub", gh.Attempts, func() error {
			_, _, err := ghc.Repositories.Get(ctx, "retryhttp", "retryhttp")
			return err
		}},
	}

	fmt.Fprintf(w, "One retryhttp Transport under four SDK clients, %d calls to each, %d at a time, all at once.\n",
		oneLayerCalls, oneLayerConcurrency)
	fmt.Fprintln(w, "Each SDK's own retries are off; the Transport's budget is per host (500 tokens, 5 a retry).")
	fmt.Fprintln(w)
	failed := make([]int, len(providers))
	var wg sync.WaitGroup
	for i, p := range providers {
		for range oneLayerConcurrency {
			wg.Go(func() {
				for range oneLayerCalls / oneLayerConcurrency {
					if p.call() != nil {
						mu.Lock()
						failed[i]++
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	fmt.Fprintln(w, "| provider | calls | failed calls | requests it received | per call |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for i, p := range providers {
		n := p.attempts()
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.2f |\n", p.name, oneLayerCalls, failed[i], n, float64(n)/oneLayerCalls)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The throttled provider got its 1000 calls and the 100 retries its bucket paid for, then one")
	fmt.Fprintln(w, "request per call; the others got exactly one request per call, their budgets untouched.")
	return nil
}
