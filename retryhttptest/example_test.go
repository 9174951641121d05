package retryhttptest_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	nethttptest "net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleNewServer() {
	// Each logical request fails twice, then reaches the handler.
	srv := retryhttptest.NewServer(nil, retryhttptest.First(2, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New()}
	resp, err := client.Get(srv.URL + "/orders/42")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()

	r := srv.Request("GET /orders/42")
	fmt.Println("status:", resp.StatusCode)
	fmt.Println("attempts:", r.Attempts, "executions:", r.Executions)
	fmt.Println("outcomes:", r.Outcomes)
	// Output:
	// status: 200
	// attempts: 3 executions: 1
	// outcomes: [503 503 pass]
}

func ExampleNewTLSServer() {
	srv := retryhttptest.NewTLSServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusBadGateway)))
	defer srv.Close()

	// Wrap the server's own client transport, which trusts its certificate.
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(srv.Client().Transport))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.TLS != nil, "attempts:", srv.Attempts())
	// Output:
	// 200 true attempts: 2
}

func ExampleNewHTTP2Server() {
	// Over HTTP/2, ResetAfterRead resets the stream after the handler ran.
	srv := retryhttptest.NewHTTP2Server(nil, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(srv.Client().Transport))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Proto, resp.StatusCode)
	fmt.Println("attempts:", srv.Attempts(), "executions:", srv.Executions(), "connections:", srv.Connections())
	// Output:
	// HTTP/2.0 200
	// attempts: 2 executions: 2 connections: 1
}

func ExampleNewUnstartedServer() {
	srv := retryhttptest.NewUnstartedServer(nil, retryhttptest.Pass())
	srv.Config.ReadHeaderTimeout = time.Second
	srv.Start()
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("%d %q\n", resp.StatusCode, body)
	// Output:
	// 200 "ok\n"
}

func ExampleKeyHeader() {
	// Ten requests at once, told apart by X-Request-Id: each fails twice,
	// then succeeds, whatever the interleaving.
	srv := retryhttptest.NewServer(nil, retryhttptest.First(2, retryhttptest.Status(http.StatusServiceUnavailable)),
		retryhttptest.KeyHeader("X-Request-Id"))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithoutBudget())}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set("X-Request-Id", fmt.Sprint("req-", i))
			resp, err := client.Do(req)
			if err != nil {
				log.Fatal(err)
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	fmt.Println("requests:", len(srv.Requests()), "attempts:", srv.Attempts(), "executions:", srv.Executions())
	r := srv.Request("req-7")
	fmt.Println("req-7:", r.Attempts, "attempts,", r.Executions, "execution")
	// Output:
	// requests: 10 attempts: 30 executions: 10
	// req-7: 3 attempts, 1 execution
}

func ExampleKeyFunc() {
	// Key logical requests by a query parameter.
	srv := retryhttptest.NewServer(nil, retryhttptest.Sequence(retryhttptest.Status(http.StatusTooManyRequests)),
		retryhttptest.KeyFunc(func(r *http.Request) string { return r.URL.Query().Get("id") }))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithThrottleBackoff(backoff.Constant(time.Millisecond)))}
	for _, id := range []string{"a", "b"} {
		resp, err := client.Get(srv.URL + "/?id=" + id)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(id, resp.StatusCode, srv.Request(id).Outcomes)
	}
	// Output:
	// a 200 [429 pass]
	// b 200 [429 pass]
}

func ExampleResetAfterRead() {
	// The handler runs, then the connection is reset. The client cannot
	// know whether its POST was executed, so retryhttp does not resend it
	// without an idempotency key. With one, it does, and the server must
	// honour the key: this handler does not, so "two pens" ran twice.
	var mu sync.Mutex
	var orders []string
	srv := retryhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		orders = append(orders, string(b))
		mu.Unlock()
	}), retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New()}
	_, err := client.Post(srv.URL+"/orders", "text/plain", strings.NewReader("one book"))
	fmt.Println("error:", err != nil)

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader("two pens"))
	req.Header.Set("Idempotency-Key", "order-2")
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	r := srv.Request("order-2")
	fmt.Println("keyed:", resp.StatusCode, r.Outcomes, "same body:", r.SameBody)
	fmt.Println("executions:", srv.Executions(), orders)
	// Output:
	// error: true
	// keyed: 200 [reset pass] same body: true
	// executions: 3 [one book two pens two pens]
}

func ExampleChance() {
	// A fifth of attempts fail, decided by the seed, the key and the
	// attempt number, so every run is the same.
	f := retryhttptest.Chance(7, 0.2, retryhttptest.Status(http.StatusInternalServerError))
	srv := retryhttptest.NewServer(nil, f, retryhttptest.KeyHeader("X-Request-Id"))
	defer srv.Close()

	client := srv.Client()
	failed := 0
	for i := range 100 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-Request-Id", fmt.Sprint(i))
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed++
		}
	}
	fmt.Println("failed:", failed, "of 100")
	// Output:
	// failed: 24 of 100
}

func ExampleTruncate() {
	srv := retryhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a body of 24 bytes here\n")
	}), retryhttptest.Truncate(7))
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("%q %v\n", body, err)
	// Output:
	// "a body " unexpected EOF
}

func ExampleNewTransport() {
	// The same faults, served in memory: inside a testing/synctest bubble
	// its delays, and the client's backoff, take no real time.
	tr := retryhttptest.NewTransport(nil, retryhttptest.First(2, retryhttptest.Status(http.StatusServiceUnavailable)))
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBase(tr),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}

	resp, err := client.Get("http://inventory.test/items/7")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("GET:", resp.StatusCode, tr.Request("GET /items/7").Outcomes)

	// A key-less POST that reached the server is never resent.
	resp, err = client.Post("http://inventory.test/items", "text/plain", strings.NewReader("bolt"))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("POST:", resp.StatusCode, tr.Request("POST /items").Outcomes)
	// Output:
	// GET: 200 [503 503 pass]
	// POST: 503 [503]
}

func ExampleSequence() {
	// Attempt 1 gets a 504 after 10 ms, attempt 2 a 429 asking for a
	// second's wait, attempt 3 reaches the handler.
	srv := retryhttptest.NewServer(nil, retryhttptest.Sequence(
		retryhttptest.Delay(10*time.Millisecond, retryhttptest.Status(http.StatusGatewayTimeout)),
		retryhttptest.RetryAfter(http.StatusTooManyRequests, time.Second),
	))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBackoff(backoff.Constant(time.Millisecond)))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	for _, r := range srv.Requests() {
		fmt.Printf("%s: %q\n", r.Key, r.Outcomes)
	}
	// Output:
	// GET /: ["delay 10ms, 504" "429 Retry-After: 1" "pass"]
}

func ExampleFunc() {
	// A switch the test flips: the service is down until it is not.
	var down atomic.Bool
	down.Store(true)
	srv := retryhttptest.NewServer(nil, retryhttptest.Func(func(string, int) retryhttptest.Fault {
		if down.Load() {
			return retryhttptest.Status(http.StatusServiceUnavailable)
		}
		return retryhttptest.Pass()
	}))
	defer srv.Close()

	client := srv.Client()
	for range 2 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
		down.Store(false)
	}
	fmt.Println(srv.Request("GET /").Outcomes)
	// Output:
	// 503
	// 200
	// [503 pass]
}

// NewProxy puts faults in front of a server the test did not write: a local
// emulator, a staging service. Here the upstream is a plain net/http
// server; the proxy fails the first attempt with a 503 of its own, and
// resets the connection after the upstream answered the second.
func ExampleNewProxy() {
	var runs atomic.Int32
	upstream := nethttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		io.WriteString(w, "stored\n")
	}))
	defer upstream.Close()

	proxy := retryhttptest.NewProxy(upstream.URL, retryhttptest.Sequence(retryhttptest.Status(503), retryhttptest.ResetAfterRead()))
	defer proxy.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBackoff(backoff.Constant(time.Millisecond)))}
	req, _ := http.NewRequest(http.MethodPut, proxy.URL+"/objects/1", strings.NewReader("v1"))
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)

	rec := proxy.Requests()[0]
	fmt.Printf("%d %s", resp.StatusCode, body)
	fmt.Println("attempts:", rec.Attempts, rec.Outcomes, "executed:", rec.Executions, "upstream runs:", runs.Load())
	// Output:
	// 200 stored
	// attempts: 3 [503 reset pass] executed: 2 upstream runs: 2
}
