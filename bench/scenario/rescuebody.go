package scenario

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// This file holds the rescue matrix's rows for failures of a response body
// after its headers arrived: cut (closed or reset), an HTTP/2 stream reset,
// a stall. The server is the httptest kit's, its body served by
// net/http's ServeContent, which honours Range and If-Range; the response
// carries the validators a row names, and the kit's fault spoils the first
// attempt's body only.

// bodySize is the size of a body row's response body; bodyCut the bytes of
// it that arrive before the failure.
const (
	bodySize = 1 << 20
	bodyCut  = 256 << 10
)

// bodyData is a body row's response body, the same in every row.
var bodyData = sync.OnceValue(func() []byte {
	b := make([]byte, bodySize)
	rand.NewChaCha8([32]byte{'b', 'o', 'd', 'y'}).Read(b)
	return b
})

// gzipData is bodyData gzipped, the representation of the gzip row.
var gzipData = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bodyData())
	zw.Close()
	return buf.Bytes()
})

// lastModified is the Last-Modified of the rows that send one: long enough
// before the response's Date to be a strong validator (RFC 9110 §8.8.2.2).
var lastModified = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// A bodyOrigin is the response a body row's server gives.
type bodyOrigin struct {
	etag    string // the ETag, if any: `"v1"` strong, `W/"v1"` weak
	lastMod bool   // Last-Modified is sent
	gzip    bool   // the representation is gzipped (Content-Encoding: gzip)
}

// handler serves the origin's representation with ServeContent, which
// answers Range, If-Range and the other conditions itself.
func (o bodyOrigin) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		data := bodyData()
		if o.gzip {
			data = gzipData()
			w.Header().Set("Content-Encoding", "gzip")
		}
		if o.etag != "" {
			w.Header().Set("ETag", o.etag)
		}
		var mod time.Time
		if o.lastMod {
			mod = lastModified
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "", mod, bytes.NewReader(data))
	})
}

// stallCellTimeout bounds the stall row's cells: long enough for
// retryhttp's default stall timeout (10 s, detected within 12.5 s) and the
// resume after it.
const stallCellTimeout = 20 * time.Second

// bodyCase is a request of method to a server of origin whose first
// attempt's body meets fault; over HTTP/2 (TLS) when h2 is set. The caller
// must read bodyData.
func bodyCase(name, rule, method string, origin bodyOrigin, fault retryhttptest.Fault, h2 bool) rescueCase {
	once := method == http.MethodPost
	return rescueCase{name: name, rule: rule, once: once, run: func(ctx context.Context, lib peers.Library) Cell {
		srv := retryhttptest.NewUnstartedServer(origin.handler(), retryhttptest.First(1, fault))
		srv.Config.ErrorLog = discardLog
		base := freshBase()
		startServer(srv.Server, base, h2)
		defer srv.Close()
		c := sendBody(lib, base, newReq(ctx, method, srv.URL+"/file.bin"), bodyData())
		c.Executions = int64(srv.Executions())
		return c
	}}
}

// bodyCases returns the rows for failures of the response body.
func bodyCases() []rescueCase {
	strong := bodyOrigin{etag: `"v1"`}
	cut := retryhttptest.CloseAfter(bodyCut)
	stall := bodyCase("GET 1 MiB, strong ETag: body stalls at 256 KiB", "", http.MethodGet, strong,
		retryhttptest.StallAfter(bodyCut), false)
	stall.timeout = stallCellTimeout
	return []rescueCase{
		bodyCase("GET 1 MiB, strong ETag: body cut (closed) at 256 KiB", "", http.MethodGet, strong, cut, false),
		bodyCase("GET 1 MiB, strong ETag: body cut (reset) at 256 KiB", "", http.MethodGet, strong,
			retryhttptest.ResetAfter(bodyCut), false),
		bodyCase("GET 1 MiB, Last-Modified only: body cut at 256 KiB", "", http.MethodGet, bodyOrigin{lastMod: true}, cut, false),
		bodyCase("GET 1 MiB, weak ETag: body cut at 256 KiB", ruleWeakETag, http.MethodGet, bodyOrigin{etag: `W/"v1"`}, cut, false),
		bodyCase("GET 1 MiB, no validator: body cut at 256 KiB", ruleNoValidator, http.MethodGet, bodyOrigin{}, cut, false),
		bodyCase("GET 1 MiB, strong ETag, gzip decoded by net/http: body cut at 256 KiB", ruleDecoded, http.MethodGet,
			bodyOrigin{etag: `"v1"`, gzip: true}, cut, false),
		bodyCase("GET 1 MiB, strong ETag: HTTP/2 stream reset at 256 KiB", "", http.MethodGet, strong, cut, true),
		stall,
		bodyCase("POST without a key, strong ETag: response body cut at 256 KiB", ruleKeyless, http.MethodPost, strong, cut, false),
	}
}
