package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

// The LLM APIs have no implementation to test against, so these fakes
// answer as the vendors' API references document: the status, the request
// ID header, and the JSON error object of each vendor; streams as
// server-sent events.

// fakeOpenAI serves chat completions (whole or streamed) and file uploads.
var fakeOpenAI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Request-Id", "req_8d2b5c1e9f0a")
	w.Header().Set("Openai-Processing-Ms", "412")
	switch r.URL.Path {
	case "/v1/chat/completions":
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			for _, chunk := range []string{`"role":"assistant","content":""`, `"content":"Hello"`, `"content":" there"`} {
				fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1795435230,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{%s},\"finish_reason\":null}]}\n\n", chunk)
				http.NewResponseController(w).Flush()
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1795435230,"model":"gpt-4o-mini",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there","refusal":null},"logprobs":null,"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`)
	case "/v1/files":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"file-abc123","object":"file","bytes":120,"created_at":1795435230,"filename":"batch.jsonl","purpose":"batch","status":"processed"}`)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
})

// openAIError answers as the OpenAI API answers an error: its error object
// with type, code and param, and the request ID; extra holds header pairs.
func openAIError(status int, typ, code, message string, extra ...string) retryhttptest.Fault {
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"req_4f1c0e7a2b9d"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return retryhttptest.Respond(status, h, string(b))
}

// fakeAnthropic serves messages, whole or streamed.
var fakeAnthropic = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Request-Id", "req_011CSHoEeqs5C35K2UUqR7Fy")
	if r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, ev := range [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there"}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`},
			{"message_stop", `{"type":"message_stop"}`},
		} {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev[0], ev[1])
			http.NewResponseController(w).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-5-5",`+
		`"content":[{"type":"text","text":"Hello there"}],"stop_reason":"end_turn","stop_sequence":null,`+
		`"usage":{"input_tokens":9,"output_tokens":2}}`)
})

// anthropicError answers as the Anthropic API answers an error: its error
// object with the error's type, and the request ID in the body and in a
// header; extra holds header pairs.
func anthropicError(status int, typ, message string, extra ...string) retryhttptest.Fault {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message},
		"request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
	h := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_011CSHoEeqs5C35K2UUqR7Fy"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return retryhttptest.Respond(status, h, string(b))
}
