package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chain starts services A, B, C and D, each calling the next through its own
// Transport, and E, which always answers 503. It returns A's URL, the count
// of calls that reached E, and a function that stops everything.
func chain(t *testing.T, middleware bool) (string, *atomic.Int32, func()) {
	t.Helper()
	var calls atomic.Int32
	e := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "E is down", http.StatusServiceUnavailable)
	}))
	stops := []func(){e.Close}
	next := e.URL
	for range 4 { // D, C, B, A
		tr := retryhttp.New(retryhttp.WithBackoff(backoff.Constant(0)))
		client := &http.Client{Transport: tr}
		dep := next
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, dep, nil)
			if err != nil {
				panic(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode >= 500 {
				http.Error(w, "dependency failed", http.StatusBadGateway)
				return
			}
			io.WriteString(w, "ok")
		})
		if middleware {
			h = Handler(h)
		}
		srv := httptest.NewServer(h)
		stops = append(stops, srv.Close, tr.CloseIdleConnections)
		next = srv.URL
	}
	return next, &calls, func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
}

// callsPerRequest sends n requests to a with a plain client and returns the
// calls that reached E per request.
func callsPerRequest(t *testing.T, a string, calls *atomic.Int32, n int) float64 {
	t.Helper()
	calls.Store(0)
	for range n {
		resp, err := http.Get(a)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	}
	return float64(calls.Load()) / float64(n)
}

func TestHandlerRetriesAtOneLayer(t *testing.T) {
	tests := []struct {
		middleware bool
		want       float64
	}{
		{false, 81}, // 3⁴: every layer retries every failure below it
		{true, 3},   // only D, the layer next to the failure, retries
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("middleware=", tt.middleware), func(t *testing.T) {
			a, calls, stop := chain(t, tt.middleware)
			defer stop()
			assert.Equal(t, tt.want, callsPerRequest(t, a, calls, 1), "calls reaching E for one request to A, cold start")
		})
	}
}

// TestChainFigures measures the calls that reach a failing E per request to
// A, from a cold start, over 1, 50 and 1000 requests; docs/chains.md quotes
// its table.
func TestChainFigures(t *testing.T) {
	var b strings.Builder
	b.WriteString("\n| A -> B -> C -> D -> E, E down | 1 request | 50 requests | 1000 requests |\n| --- | --- | --- | --- |\n")
	for _, middleware := range []bool{false, true} {
		name := "retryhttp in every layer"
		if middleware {
			name += ", with server.Handler"
		}
		fmt.Fprintf(&b, "| %s |", name)
		for _, n := range []int{1, 50, 1000} {
			a, calls, stop := chain(t, middleware)
			per := callsPerRequest(t, a, calls, n)
			stop()
			fmt.Fprintf(&b, " %.2f |", per)
			if middleware {
				assert.LessOrEqual(t, per, 3.0, "%d requests", n)
			}
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
}

func TestHandlerSignal(t *testing.T) {
	tests := []struct {
		name   string
		gaveUp bool
		write  func(w http.ResponseWriter)
		want   string
	}{
		{"gave up, 503", true, func(w http.ResponseWriter) { w.WriteHeader(503) }, "false"},
		{"gave up, 429", true, func(w http.ResponseWriter) { w.WriteHeader(429) }, "false"},
		{"gave up, but 200", true, func(w http.ResponseWriter) { io.WriteString(w, "cached") }, ""},
		{"gave up, but 404", true, func(w http.ResponseWriter) { w.WriteHeader(404) }, ""},
		{"did not give up, 503", false, func(w http.ResponseWriter) { w.WriteHeader(503) }, ""},
		{"status written first", true, func(w http.ResponseWriter) { w.WriteHeader(500); w.Header().Set("X", "y") }, "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.gaveUp {
					layer.MarkGaveUp(r.Context())
				}
				tt.write(w)
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			assert.Equal(t, tt.want, rec.Result().Header.Get(layer.ShouldRetryHeader))
		})
	}
}

func TestHandlerKeepsWriterFeatures(t *testing.T) {
	t.Run("flush", func(t *testing.T) {
		srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f, ok := w.(http.Flusher)
			require.True(t, ok, "http.Flusher")
			io.WriteString(w, "part")
			f.Flush()
		})))
		defer srv.Close()
		assert.Equal(t, "part", getBody(t, srv.URL))
	})
	t.Run("hijack through Unwrap", func(t *testing.T) {
		srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			require.NoError(t, err)
			defer conn.Close()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nraw ok")
			buf.Flush()
		})))
		defer srv.Close()
		assert.Equal(t, "raw ok", getBody(t, srv.URL))
	})
	assert.Panics(t, func() { Handler(nil) })
}

// getBody GETs url with a plain client and returns the response body.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// minimalWriter is a ResponseWriter with none of the optional interfaces.
type minimalWriter struct{ h http.Header }

func (w *minimalWriter) Header() http.Header         { return w.h }
func (w *minimalWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *minimalWriter) WriteHeader(int)             {}

// writerFeatures lists which optional interfaces w has.
func writerFeatures(w http.ResponseWriter) []string {
	var got []string
	if _, ok := w.(http.Flusher); ok {
		got = append(got, "Flusher")
	}
	if _, ok := w.(http.Hijacker); ok {
		got = append(got, "Hijacker")
	}
	if _, ok := w.(io.ReaderFrom); ok {
		got = append(got, "ReaderFrom")
	}
	if _, ok := w.(http.Pusher); ok {
		got = append(got, "Pusher")
	}
	return got
}

func TestHandlerWriterHasExactlyTheWrappedFeatures(t *testing.T) {
	check := func(t *testing.T, w http.ResponseWriter) {
		t.Helper()
		var inner []string
		Handler(http.HandlerFunc(func(ww http.ResponseWriter, r *http.Request) {
			inner = writerFeatures(ww)
		})).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, writerFeatures(w), inner)
	}
	t.Run("none", func(t *testing.T) { check(t, &minimalWriter{h: http.Header{}}) })
	t.Run("recorder", func(t *testing.T) { check(t, httptest.NewRecorder()) })
	serve := func(t *testing.T, h2c bool) {
		var outer, inner []string
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			outer = writerFeatures(w)
			Handler(http.HandlerFunc(func(ww http.ResponseWriter, r *http.Request) {
				inner = writerFeatures(ww)
			})).ServeHTTP(w, r)
		}))
		base := http.DefaultTransport
		if h2c {
			srv.Config.Protocols = new(http.Protocols)
			srv.Config.Protocols.SetUnencryptedHTTP2(true)
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			tr := &http.Transport{Protocols: &p}
			defer tr.CloseIdleConnections()
			base = tr
		}
		srv.Start()
		defer srv.Close()
		resp, err := base.RoundTrip(httptest.NewRequest(http.MethodGet, srv.URL, nil).WithContext(t.Context()))
		require.NoError(t, err)
		resp.Body.Close()
		require.NotEmpty(t, outer)
		assert.Equal(t, outer, inner)
	}
	t.Run("HTTP/1 server", func(t *testing.T) { serve(t, false) })
	t.Run("HTTP/2 server", func(t *testing.T) { serve(t, true) })
}

func TestHandlerFlushNotSupported(t *testing.T) {
	var err error
	Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err = http.NewResponseController(w).Flush()
	})).ServeHTTP(&minimalWriter{h: http.Header{}}, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.ErrorIs(t, err, http.ErrNotSupported)
}

func TestHandlerHijackByAssertion(t *testing.T) {
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "no Hijacker", http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nraw ok")
		buf.Flush()
	})))
	defer srv.Close()
	assert.Equal(t, "raw ok", getBody(t, srv.URL))
}

func TestHandlerSignalAfterReadFrom(t *testing.T) {
	// io.Copy into the writer goes through ReadFrom, which commits a 200:
	// a later failure status cannot be signalled.
	rec := httptest.NewRecorder()
	w := struct {
		http.ResponseWriter
		io.ReaderFrom
	}{rec, readerFromFunc(func(r io.Reader) (int64, error) { return io.Copy(rec.Body, r) })}
	Handler(http.HandlerFunc(func(ww http.ResponseWriter, r *http.Request) {
		layer.MarkGaveUp(r.Context())
		io.Copy(ww, strings.NewReader("streamed"))
		ww.WriteHeader(http.StatusBadGateway)
	})).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Empty(t, rec.Header().Get(layer.ShouldRetryHeader))
	assert.Equal(t, "streamed", rec.Body.String())
}

type readerFromFunc func(io.Reader) (int64, error)

func (f readerFromFunc) ReadFrom(r io.Reader) (int64, error) { return f(r) }
