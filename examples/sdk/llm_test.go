package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	openaioption "github.com/openai/openai-go/option"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/stream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An llmVendor is an LLM SDK under test: its fake, and one generation call
// made with the SDK's own retries (twice, its default) or with the recipe's
// (none, over retryhttp).
type llmVendor struct {
	name     string
	handler  http.Handler
	generate func(ctx context.Context, srvURL string, hc *http.Client, ownRetries bool) error
	// failures are the same failures in the vendor's own shapes, and the
	// least wait each asks for.
	failures []llmFailure
}

type llmFailure struct {
	name  string
	fault retryhttptest.Fault
	wait  time.Duration
}

func openAIVendor() llmVendor {
	return llmVendor{
		name:    "openai-go",
		handler: fakeOpenAI,
		generate: func(ctx context.Context, srvURL string, hc *http.Client, own bool) error {
			c := newOpenAIClient(srvURL+"/v1/", hc)
			if own {
				c = openai.NewClient(openaioption.WithBaseURL(srvURL+"/v1/"), openaioption.WithAPIKey("sk-test"),
					openaioption.WithHTTPClient(hc))
			}
			_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:    openai.ChatModelGPT4oMini,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
			})
			return err
		},
		failures: []llmFailure{
			{"429, retry-after-ms: 20", openAIError(429, "requests", "rate_limit_exceeded",
				"Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
				"Retry-After-Ms", "20"), 20 * time.Millisecond},
			{"502", openAIError(502, "server_error", "", "Bad gateway."), 0},
			{"500", openAIError(500, "server_error", "", "The server had an error while processing your request. Sorry about that!"), 0},
			{"503, Retry-After: 1", openAIError(503, "server_error", "", "The engine is currently overloaded, please try again later.",
				"Retry-After", "1"), time.Second},
			{"409", openAIError(409, "invalid_request_error", "conflict", "Another request is in progress for this conversation."), 0},
			{"503, x-should-retry: false", openAIError(503, "server_error", "", "The server is unavailable.", "X-Should-Retry", "false"), 0},
			{"reset before the server read the request", retryhttptest.CloseBeforeRead(), 0},
			{"reset after the server read the request", retryhttptest.ResetAfterRead(), 0},
		},
	}
}

func anthropicVendor() llmVendor {
	return llmVendor{
		name:    "anthropic-sdk-go",
		handler: fakeAnthropic,
		generate: func(ctx context.Context, srvURL string, hc *http.Client, own bool) error {
			c := newAnthropicClient(srvURL, hc)
			if own {
				c = anthropic.NewClient(anthropicoption.WithBaseURL(srvURL), anthropicoption.WithAPIKey("sk-ant-test"),
					anthropicoption.WithHTTPClient(hc))
			}
			_, err := c.Messages.New(ctx, anthropic.MessageNewParams{
				Model:     anthropic.ModelClaudeSonnet5_5,
				MaxTokens: 64,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))},
			})
			return err
		},
		failures: []llmFailure{
			{"429, retry-after: 1", anthropicError(429, "rate_limit_error",
				"This request would exceed the rate limit for your organization of 50 requests per minute.",
				"Retry-After", "1", "Anthropic-Ratelimit-Requests-Remaining", "0"), time.Second},
			{"529 overloaded", anthropicError(529, "overloaded_error", "Overloaded"), 0},
			{"500", anthropicError(500, "api_error", "Internal server error"), 0},
			{"503, Retry-After: 1", anthropicError(503, "api_error", "Service unavailable", "Retry-After", "1"), time.Second},
			{"409", anthropicError(409, "api_error", "Conflict"), 0},
			{"503, x-should-retry: false", anthropicError(503, "api_error", "Service unavailable", "X-Should-Retry", "false"), 0},
			{"reset before the server read the request", retryhttptest.CloseBeforeRead(), 0},
			{"reset after the server read the request", retryhttptest.ResetAfterRead(), 0},
		},
	}
}

// TestLLMSideBySide puts one generation call of each LLM SDK through each
// failure twice: with the SDK's own retries over a plain transport, and
// with the recipe (the SDK's retries off, llmTransport under it). The
// recipe must rescue every failure the SDK rescues, and wait at least what
// the server asked.
func TestLLMSideBySide(t *testing.T) {
	for _, v := range []llmVendor{openAIVendor(), anthropicVendor()} {
		t.Run(v.name, func(t *testing.T) {
			for _, f := range v.failures {
				t.Run(f.name, func(t *testing.T) {
					t.Parallel()
					own := retryhttptest.NewServer(v.handler, retryhttptest.First(1, f.fault))
					defer own.Close()
					ownErr := v.generate(t.Context(), own.URL, &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, true)

					srv := retryhttptest.NewServer(v.handler, retryhttptest.First(1, f.fault))
					defer srv.Close()
					tr := llmTransport(fast...)
					defer tr.CloseIdleConnections()
					err := v.generate(t.Context(), srv.URL, &http.Client{Transport: tr}, false)

					ownRec, rec := own.Requests()[0], srv.Requests()[0]
					t.Logf("SDK's retries: %s, executed %d, error %v; recipe: %s, executed %d, error %v",
						attempted(ownRec), ownRec.Executions, ownErr, attempted(rec), rec.Executions, err)
					if ownErr == nil {
						require.NoError(t, err, "the SDK's own retries rescue it, so the recipe must")
					}
					assert.LessOrEqual(t, rec.Attempts, ownRec.Attempts, "the recipe sends no more than the SDK")
					if f.wait > 0 && rec.Attempts > 1 {
						assert.GreaterOrEqual(t, rec.Arrivals[1].Sub(rec.Arrivals[0]), f.wait, "waited what the server asked")
					}
				})
			}
		})
	}
}

// TestOpenAIUploadSentOnce checks that a call with a side effect, a file
// upload, is not resent by the recipe after the server read it, where the
// SDK's own retries upload the file twice.
func TestOpenAIUploadSentOnce(t *testing.T) {
	upload := func(hc *http.Client, srvURL string, own bool) error {
		c := newOpenAIClient(srvURL+"/v1/", hc)
		if own {
			c = openai.NewClient(openaioption.WithBaseURL(srvURL+"/v1/"), openaioption.WithAPIKey("sk-test"), openaioption.WithHTTPClient(hc))
		}
		_, err := c.Files.New(t.Context(), openai.FileNewParams{
			File:    openai.File(strings.NewReader(`{"custom_id":"1","method":"POST","url":"/v1/chat/completions","body":{}}`+"\n"), "batch.jsonl", "application/jsonl"),
			Purpose: openai.FilePurposeBatch,
		})
		return err
	}
	own := retryhttptest.NewServer(fakeOpenAI, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer own.Close()
	require.NoError(t, upload(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, own.URL, true))
	assert.Equal(t, 2, own.Executions(), "the SDK's own retries upload the file twice")

	srv := retryhttptest.NewServer(fakeOpenAI, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer srv.Close()
	tr := llmTransport(fast...)
	defer tr.CloseIdleConnections()
	require.Error(t, upload(&http.Client{Transport: tr}, srv.URL, false))
	assert.Equal(t, 1, srv.Attempts(), "the recipe sends the upload once")
	assert.Equal(t, 1, srv.Executions())
}

// TestLLMStreams checks streamed responses: a failure before the stream's
// headers is retried; a stream cut short after them reaches the caller as
// an error, never retried.
func TestLLMStreams(t *testing.T) {
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
	}
	for _, tt := range []struct {
		name     string
		fault    retryhttptest.Fault
		text     string
		failed   bool
		attempts int
	}{
		{"502 before the stream", retryhttptest.First(1, openAIError(502, "server_error", "", "Bad gateway.")), "Hello there", false, 2},
		{"cut mid-stream", retryhttptest.First(1, retryhttptest.Truncate(400)), "Hello", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := retryhttptest.NewServer(fakeOpenAI, tt.fault)
			defer srv.Close()
			tr := llmTransport(fast...)
			defer tr.CloseIdleConnections()
			client := newOpenAIClient(srv.URL+"/v1/", &http.Client{Transport: tr})
			stream := client.Chat.Completions.NewStreaming(t.Context(), params)
			var text strings.Builder
			for stream.Next() {
				for _, c := range stream.Current().Choices {
					text.WriteString(c.Delta.Content)
				}
			}
			assert.Equal(t, tt.failed, stream.Err() != nil, "stream error: %v", stream.Err())
			stream.Close()
			assert.Equal(t, tt.text, text.String())
			assert.Equal(t, tt.attempts, srv.Attempts())
		})
	}
}

// errorFirst serves, to the first request, a 200 stream whose first event
// is event, as an overloaded API answers once it has sent its status, and
// hands every other request to h.
func errorFirst(h http.Handler, event string) (http.Handler, *atomic.Int32) {
	var n atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			io.WriteString(w, event)
			return
		}
		h.ServeHTTP(w, r)
	}), &n
}

// TestLLMErrorFirstStreams: a streamed generation whose 200 opens with the
// vendor's error event is retried by the recipe, and the caller reads the
// good stream; with the SDK's own retries, the error event reaches the
// caller.
func TestLLMErrorFirstStreams(t *testing.T) {
	for _, tt := range []struct {
		name   string
		fake   http.Handler
		event  string
		stream func(ctx context.Context, srvURL string, hc *http.Client, own bool) (string, error)
	}{
		{"openai-go", fakeOpenAI, "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n",
			openAIStream},
		{"anthropic-sdk-go", fakeAnthropic, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			anthropicStream},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, own := range []bool{true, false} {
				h, n := errorFirst(tt.fake, tt.event)
				srv := httptest.NewServer(h)
				var hc *http.Client
				if own {
					hc = &http.Client{} // the SDK's own retries, over a plain transport
				} else {
					tr := llmTransport(fast...)
					defer tr.CloseIdleConnections()
					hc = &http.Client{Transport: tr}
				}
				text, err := tt.stream(t.Context(), srv.URL, hc, own)
				srv.Close()
				if own {
					assert.Error(t, err, "the SDK hands the error event to its caller")
					assert.Empty(t, text)
					assert.Equal(t, int32(1), n.Load(), "and never retries it")
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, "Hello there", text)
				assert.Equal(t, int32(2), n.Load(), "the error event retried")
			}
		})
	}
}

// TestLLMCutGenerations: a streamed generation cut after its first events
// ends in the SDK's stream.Err(), one request at the server, with the
// SDK's own retries and with the recipe, whose error says what was read.
func TestLLMCutGenerations(t *testing.T) {
	for _, v := range []struct {
		name   string
		fake   http.Handler
		stream func(ctx context.Context, srvURL string, hc *http.Client, own bool) (string, error)
	}{
		{"openai-go", fakeOpenAI, openAIStream},
		{"anthropic-sdk-go", fakeAnthropic, anthropicStream},
	} {
		t.Run(v.name, func(t *testing.T) {
			for _, own := range []bool{true, false} {
				srv := retryhttptest.NewServer(v.fake, retryhttptest.Truncate(450))
				hc := &http.Client{}
				if !own {
					tr := llmTransport(fast...)
					defer tr.CloseIdleConnections()
					hc = &http.Client{Transport: tr}
				}
				_, err := v.stream(t.Context(), srv.URL, hc, own)
				attempts := srv.Attempts()
				srv.Close()
				require.Error(t, err, "own retries: %v", own)
				assert.Equal(t, 1, attempts, "never resent (own retries: %v)", own)
				var se *stream.Error
				assert.Equal(t, !own, errors.As(err, &se), "a *stream.Error through the recipe: %v", err)
			}
		})
	}
}

// openAIStream streams a chat completion with openai-go, with its own
// retries when own, and returns its text and stream.Err().
func openAIStream(ctx context.Context, srvURL string, hc *http.Client, own bool) (string, error) {
	c := newOpenAIClient(srvURL+"/v1/", hc)
	if own {
		c = openai.NewClient(openaioption.WithBaseURL(srvURL+"/v1/"), openaioption.WithAPIKey("sk-test"), openaioption.WithHTTPClient(hc))
	}
	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
	})
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	return text.String(), s.Err()
}

// anthropicStream streams a message with anthropic-sdk-go, with its own
// retries when own, and returns its text and stream.Err().
func anthropicStream(ctx context.Context, srvURL string, hc *http.Client, own bool) (string, error) {
	c := newAnthropicClient(srvURL, hc)
	if own {
		c = anthropic.NewClient(anthropicoption.WithBaseURL(srvURL), anthropicoption.WithAPIKey("sk-ant-test"), anthropicoption.WithHTTPClient(hc))
	}
	s := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet5_5,
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))},
	})
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		if d, ok := s.Current().AsAny().(anthropic.ContentBlockDeltaEvent); ok {
			text.WriteString(d.Delta.Text)
		}
	}
	return text.String(), s.Err()
}
