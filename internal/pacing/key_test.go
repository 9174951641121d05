package pacing

import (
	"hash/maphash"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
)

func TestKeyOf(t *testing.T) {
	seed := maphash.MakeSeed()
	req := func(url string, kv ...string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, url, nil)
		for i := 0; i+1 < len(kv); i += 2 {
			r.Header.Add(kv[i], kv[i+1])
		}
		return r
	}
	host := wire.MakeKey("https", "api.example.com")

	got := KeyOf(req("https://API.example.com:443/v1"), "", seed)
	assert.Equal(t, Key{Host: host}, got, "a host's spellings share its key")

	got = KeyOf(req("https://api.example.com/", "Authorization", "Bearer a"), "", seed)
	assert.Equal(t, Key{Host: host}, got, "without a partition header, the header is not read")

	got = KeyOf(req("https://api.example.com/"), "Authorization", seed)
	assert.Equal(t, Key{Host: host}, got, "a request without the partition header: the host's partition")

	a := KeyOf(req("https://api.example.com/", "Authorization", "Bearer a"), "Authorization", seed)
	a2 := KeyOf(req("https://api.example.com/x", "Authorization", "Bearer a"), "Authorization", seed)
	b := KeyOf(req("https://api.example.com/", "Authorization", "Bearer b"), "Authorization", seed)
	assert.Equal(t, host, a.Host)
	assert.NotZero(t, a.Partition, "a partition is never the host's own")
	assert.Equal(t, a, a2, "one token, one partition")
	assert.NotEqual(t, a, b, "two tokens, two partitions")

	ab := KeyOf(req("https://api.example.com/", "X-Key", "a", "X-Key", "b"), "X-Key", seed)
	ba := KeyOf(req("https://api.example.com/", "X-Key", "b", "X-Key", "a"), "X-Key", seed)
	joined := KeyOf(req("https://api.example.com/", "X-Key", "ab"), "X-Key", seed)
	assert.NotEqual(t, ab, ba, "values in another order")
	assert.NotEqual(t, ab, joined, "values joined")

	other := KeyOf(req("https://api.example.com/", "Authorization", "Bearer a"), "Authorization", maphash.MakeSeed())
	assert.NotEqual(t, a.Partition, other.Partition, "another seed, another hash")
}

func BenchmarkKeyOf(b *testing.B) {
	seed := maphash.MakeSeed()
	r := httptest.NewRequest(http.MethodGet, "https://api.example.com/v1", nil)
	r.Header.Set("Authorization", "Bearer 0123456789abcdef")
	b.ReportAllocs()
	for b.Loop() {
		KeyOf(r, "Authorization", seed)
	}
}

// parseKeyTests is shared by TestParseKey and the seed corpus of
// FuzzParseKey.
var parseKeyTests = []struct {
	in string
	ok bool
}{
	{"https://api.example.com", true},
	{"http://localhost:8080", true},
	{"https://api.example.com#1f", true},
	{"https://api.example.com:443", false}, // the default port is dropped
	{"HTTPS://api.example.com", false},
	{"https://Api.example.com", false},
	{"https://api.example.com#", false},
	{"https://api.example.com#0", false},
	{"https://api.example.com#01f", false},
	{"https://api.example.com#zz", false},
	{"https://a/b", false},
	{"api.example.com", false},
	{"://x", false},
	{"https://", false},
	{"", false},
}

func TestParseKey(t *testing.T) {
	for _, tt := range parseKeyTests {
		t.Run(tt.in, func(t *testing.T) {
			k, ok := ParseKey(tt.in)
			assert.Equal(t, tt.ok, ok)
			if ok {
				assert.Equal(t, tt.in, k.String(), "String reads back")
			}
		})
	}
	k := StableKeyOf(&http.Request{URL: &url.URL{Scheme: "https", Host: "API.example.com"}, Header: http.Header{"Authorization": {"Bearer a"}}}, "Authorization")
	got, ok := ParseKey(k.String())
	assert.True(t, ok)
	assert.Equal(t, k, got)
}

// FuzzParseKey checks that a key a Store returns is read without a panic,
// and only as String would have written it.
func FuzzParseKey(f *testing.F) {
	for _, tt := range parseKeyTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, ok := ParseKey(s)
		if ok && k.String() != s {
			t.Fatalf("ParseKey(%q) = %+v, which String writes %q", s, k, k.String())
		}
	})
}

func TestStableKeyOfIsTheSameInEveryProcess(t *testing.T) {
	req := &http.Request{URL: &url.URL{Scheme: "https", Host: "api.example.com"}, Header: http.Header{"Authorization": {"Bearer a"}}}
	// A SHA-256 of "Bearer a\x00": the same in every process, whatever
	// its seed.
	assert.Equal(t, "https://api.example.com#9969fddee9b6bce4", StableKeyOf(req, "Authorization").String())
	assert.Equal(t, "https://api.example.com", StableKeyOf(req, "").String())
}
