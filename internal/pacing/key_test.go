package pacing

import (
	"hash/maphash"
	"net/http"
	"net/http/httptest"
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
