// Command quickstart runs a retryhttp client against a flaky local service
// and prints what happened: each attempt, each delay, and the final result.
//
//	go run ./examples/quickstart
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run prints the demonstration to w, and returns an error if any step did
// not end as described.
func run(w io.Writer) error {
	fmt.Fprintln(w, "retryhttp quickstart: one client, a flaky local service, five requests.")
	for _, s := range steps {
		if err := s.run(w); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}

// A step is one request against a fresh service with a fault.
type step struct {
	title  string
	fault  retryhttptest.Fault
	method string
	path   string
	key    string // Idempotency-Key, if any
	opts   []retryhttp.Option
	lesson string // what the result shows
	holds  func(resp *http.Response, err error, srv *retryhttptest.Server, svc *service) bool
}

var steps = []step{{
	title:  "GET /orders/42; the service answers 503, then 429 with Retry-After: 1, then the order",
	fault:  retryhttptest.Sequence(retryhttptest.Status(503), retryhttptest.RetryAfter(429, time.Second)),
	method: http.MethodGet, path: "/orders/42",
	lesson: "503 and 429 are transient, so both were retried, and after the 429 it waited the 1 s the service asked for",
	holds: func(resp *http.Response, err error, srv *retryhttptest.Server, _ *service) bool {
		return err == nil && resp.StatusCode == 200 && srv.Attempts() == 3
	},
}, {
	title:  "GET /orders/7; the service answers 404",
	fault:  retryhttptest.Pass(),
	method: http.MethodGet, path: "/orders/7",
	lesson: "a 404 is final: retrying cannot change it",
	holds: func(resp *http.Response, err error, srv *retryhttptest.Server, _ *service) bool {
		return err == nil && resp.StatusCode == 404 && srv.Attempts() == 1
	},
}, {
	title:  "POST /orders without an Idempotency-Key; the connection is reset after the service read it",
	fault:  retryhttptest.First(1, retryhttptest.ResetAfterRead()),
	method: http.MethodPost, path: "/orders",
	lesson: "a POST that reached the service may have run (this one did), so it is not sent again",
	holds: func(_ *http.Response, err error, srv *retryhttptest.Server, svc *service) bool {
		return err != nil && srv.Attempts() == 1 && svc.created() == 1
	},
}, {
	title:  "POST /orders with Idempotency-Key: order-8; the same failure",
	fault:  retryhttptest.First(1, retryhttptest.ResetAfterRead()),
	method: http.MethodPost, path: "/orders", key: "order-8",
	lesson: "the key lets the service recognise the retry, so resending is safe: one order, not two",
	holds: func(resp *http.Response, err error, srv *retryhttptest.Server, svc *service) bool {
		return err == nil && resp.StatusCode == 201 && srv.Attempts() == 2 && svc.created() == 1
	},
}, {
	title:  "GET /orders/42 with hedging; the first attempt hangs, as on a slow replica",
	fault:  retryhttptest.First(1, retryhttptest.Hang()),
	method: http.MethodGet, path: "/orders/42",
	// By default the delay is the host's 95th-percentile latency, known
	// after 100 requests; a fixed delay shows it on the first.
	opts:   []retryhttp.Option{retryhttp.WithHedging(hedge.Delay(50 * time.Millisecond))},
	lesson: "a slow request is hedged: a second copy went out when the first had no answer after 50 ms, it won, and the first was cancelled",
	holds: func(resp *http.Response, err error, srv *retryhttptest.Server, _ *service) bool {
		return err == nil && resp.StatusCode == 200 && srv.Attempts() >= 2 &&
			base.Attempt(resp.Request.Context()) >= 2
	},
}}

func (s step) run(w io.Writer) error {
	fmt.Fprintf(w, "\n%s\n", s.title)
	svc := &service{}
	srv := retryhttptest.NewServer(svc, s.fault)
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(append([]retryhttp.Option{
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Fprintf(w, "  attempt %d: %s; retrying in %v\n", e.Attempt, outcome(e), e.Delay.Round(time.Millisecond))
		}),
		retryhttp.WithOnHedge(func(e retryhttp.HedgeEvent) {
			fmt.Fprintf(w, "  no answer after %v: hedging, attempt %d\n", e.Delay.Round(10*time.Millisecond), e.Attempt)
		}),
	}, s.opts...)...)}
	var body io.Reader
	if s.method == http.MethodPost {
		body = strings.NewReader(`{"item": "book", "quantity": 1}`)
	}
	req, err := http.NewRequest(s.method, srv.URL+s.path, body)
	if err != nil {
		return err
	}
	if s.key != "" {
		req.Header.Set("Idempotency-Key", s.key)
	}

	start := time.Now()
	resp, err := client.Do(req)
	elapsed := time.Since(start).Round(10 * time.Millisecond)
	if err != nil {
		var rerr *retryhttp.Error
		attempts := 1
		if errors.As(err, &rerr) {
			attempts = rerr.Attempts
		}
		fmt.Fprintf(w, "  result: an error after %d %s in %v: %v\n", attempts, plural(attempts, "attempt"), elapsed, errors.Unwrap(rerr))
	} else {
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		n := retryhttp.Attempts(resp)
		fmt.Fprintf(w, "  result: %s %q after %d %s in %v\n", resp.Status, strings.TrimSpace(string(text)), n, plural(n, "attempt"), elapsed)
	}
	fmt.Fprintf(w, "  the service saw %d %s", srv.Attempts(), plural(srv.Attempts(), "attempt"))
	if s.method == http.MethodPost {
		fmt.Fprintf(w, " and created %d %s", svc.created(), plural(svc.created(), "order"))
	}
	fmt.Fprintf(w, "\n  so: %s\n", s.lesson)
	if !s.holds(resp, err, srv, svc) {
		return errors.New("the result does not show it")
	}
	return nil
}

func outcome(e retryhttp.RetryEvent) string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// service is a tiny order service that honours idempotency keys: a POST
// with a key it has seen returns the stored result instead of creating
// another order.
type service struct {
	mu     sync.Mutex
	orders int
	byKey  map[string]string
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/orders/42":
		io.WriteString(w, "order 42: 1 book, shipped\n")
	case r.Method == http.MethodPost && r.URL.Path == "/orders":
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, s.create(r.Header.Get("Idempotency-Key"))+"\n")
	default:
		http.NotFound(w, r)
	}
}

func (s *service) create(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byKey[key]; ok && key != "" {
		return id
	}
	s.orders++
	id := fmt.Sprintf("order %d created", 100+s.orders)
	if key != "" {
		if s.byKey == nil {
			s.byKey = make(map[string]string)
		}
		s.byKey[key] = id
	}
	return id
}

func (s *service) created() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.orders
}
