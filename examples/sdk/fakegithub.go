package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

// fakeGitHub is a small fake of the GitHub REST API: it serves one
// repository, with the rate-limit headers GitHub sends on every response.
type fakeGitHub struct {
	mux *http.ServeMux

	mu     sync.Mutex
	served int // repositories served
}

func newFakeGitHub() *fakeGitHub {
	f := &fakeGitHub{mux: http.NewServeMux()}
	f.mux.HandleFunc("GET /repos/{owner}/{repo}", f.getRepository)
	return f
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", "4999")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	f.mux.ServeHTTP(w, r)
}

// Served returns how many repositories the fake has served.
func (f *fakeGitHub) Served() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served
}

func (f *fakeGitHub) getRepository(w http.ResponseWriter, r *http.Request) {
	owner, name := r.PathValue("owner"), r.PathValue("repo")
	if owner != "retryhttp" || name != "retryhttp" {
		writeGitHubJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	f.mu.Lock()
	f.served++
	f.mu.Unlock()
	writeGitHubJSON(w, http.StatusOK, map[string]any{
		"id":             1,
		"name":           name,
		"full_name":      owner + "/" + name,
		"default_branch": "main",
	})
}

func writeGitHubJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

// githubSecondaryRateLimit answers as GitHub does a request over a
// secondary rate limit: a 403 with Retry-After, in seconds, and the primary
// limit's headers that every response carries, its reset an hour away.
func githubSecondaryRateLimit(seconds int) retryhttptest.Fault {
	return retryhttptest.Respond(http.StatusForbidden, http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		"Retry-After":           {strconv.Itoa(seconds)},
		"X-Ratelimit-Limit":     {"5000"},
		"X-Ratelimit-Remaining": {"4998"},
		"X-Ratelimit-Reset":     {strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
		"X-Ratelimit-Used":      {"2"},
		"X-Ratelimit-Resource":  {"core"},
		"X-Github-Request-Id":   {"C0DE:1F2E:3D4C:5B6A:7989"},
	}, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",`+
		`"documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`)
}

// githubPrimaryRateLimit answers as GitHub does a request over the primary
// rate limit, which resets at reset.
func githubPrimaryRateLimit(reset time.Time) retryhttptest.Fault {
	return retryhttptest.Respond(http.StatusForbidden, http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		"X-Ratelimit-Limit":     {"5000"},
		"X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset":     {strconv.FormatInt(reset.Unix(), 10)},
		"X-Ratelimit-Used":      {"5000"},
		"X-Ratelimit-Resource":  {"core"},
		"X-Github-Request-Id":   {"C0DE:1F2E:3D4C:5B6A:798A"},
	}, `{"message":"API rate limit exceeded for installation ID 1.",`+
		`"documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api","status":"403"}`)
}

// githubForbidden answers as GitHub does a token without the permission a
// call needs: a 403 with the rate-limit headers of every response, requests
// remaining, and the message and documentation link in the body.
func githubForbidden() retryhttptest.Fault {
	return retryhttptest.Respond(http.StatusForbidden, http.Header{
		"Content-Type":                  {"application/json; charset=utf-8"},
		"X-Github-Request-Id":           {"C0DE:1F2E:3D4C:5B6A:7988"},
		"X-Ratelimit-Limit":             {"5000"},
		"X-Ratelimit-Remaining":         {"4999"},
		"X-Ratelimit-Used":              {"1"},
		"X-Ratelimit-Resource":          {"core"},
		"X-Ratelimit-Reset":             {strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
		"X-Accepted-Github-Permissions": {"metadata=read"},
	}, `{"message":"Resource not accessible by integration",`+
		`"documentation_url":"https://docs.github.com/rest/repos/repos#get-a-repository","status":"403"}`)
}
