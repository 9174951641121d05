package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stripe/stripe-go/v85"
)

// fakeStripe is a small fake of the Stripe API: it creates and retrieves
// PaymentIntents, and keeps an idempotency store as Stripe does. The first
// POST with an Idempotency-Key executes and its response is stored under the
// key; a later POST with the same key and the same parameters gets the
// stored response, marked Idempotent-Replayed: true, and creates nothing.
// The same key with other parameters is an idempotency_error.
//
// It serves one request at a time, so a key is never in flight twice; Stripe
// answers that case 409 Conflict.
type fakeStripe struct {
	mux *http.ServeMux

	mu       sync.Mutex
	intents  map[string]paymentIntent // by ID
	replies  map[string]storedReply   // by Idempotency-Key
	created  int                      // PaymentIntents created
	replayed int                      // stored responses sent again
	requests int                      // for Request-Id
}

// storedReply is what the idempotency store keeps for a key.
type storedReply struct {
	params string // the request's form body
	status int
	body   []byte
}

// paymentIntent is the part of Stripe's PaymentIntent object the fake keeps.
type paymentIntent struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
}

func newFakeStripe() *fakeStripe {
	f := &fakeStripe{
		mux:     http.NewServeMux(),
		intents: make(map[string]paymentIntent),
		replies: make(map[string]storedReply),
	}
	f.mux.HandleFunc("POST /v1/payment_intents", f.createPaymentIntent)
	f.mux.HandleFunc("GET /v1/payment_intents/{id}", f.retrievePaymentIntent)
	return f
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	w.Header().Set("Request-Id", "req_"+strconv.Itoa(f.requests))
	f.mux.ServeHTTP(w, r)
}

// Counts returns how many PaymentIntents the fake has created, and how many
// times it has answered a POST with a stored response instead.
func (f *fakeStripe) Counts() (created, replayed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created, f.replayed
}

func (f *fakeStripe) createPaymentIntent(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "Invalid request body.")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	params := r.PostForm.Encode()
	if key != "" {
		w.Header().Set("Idempotency-Key", key)
		if prev, ok := f.replies[key]; ok {
			if prev.params != params {
				writeError(w, http.StatusBadRequest, "idempotency_error",
					"Keys for idempotent requests can only be used with the same parameters they were first used with.")
				return
			}
			f.replayed++
			w.Header().Set("Idempotent-Replayed", "true")
			writeJSON(w, prev.status, prev.body)
			return
		}
	}

	amount, err := strconv.ParseInt(r.PostForm.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "Missing or invalid amount.")
		return
	}
	f.created++
	pi := paymentIntent{
		ID:       fmt.Sprintf("pi_%04d", f.created),
		Object:   "payment_intent",
		Amount:   amount,
		Currency: r.PostForm.Get("currency"),
		Status:   "requires_payment_method",
	}
	f.intents[pi.ID] = pi
	body, _ := json.Marshal(pi)
	if key != "" {
		f.replies[key] = storedReply{params: params, status: http.StatusOK, body: body}
	}
	writeJSON(w, http.StatusOK, body)
}

func (f *fakeStripe) retrievePaymentIntent(w http.ResponseWriter, r *http.Request) {
	pi, ok := f.intents[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "No such payment_intent.")
		return
	}
	body, _ := json.Marshal(pi)
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// stripeError is the body of a Stripe API error response, as Stripe's API
// reference shows it: an error object with its type, message and the link
// to the request's log.
func stripeError(typ, message string) string {
	b, _ := json.Marshal(map[string]map[string]string{"error": {
		"type":            typ,
		"message":         message,
		"request_log_url": "https://dashboard.stripe.com/test/logs/req_fault?t=1795435230",
	}})
	return string(b)
}

// stripeFault answers as the Stripe API answers an error, in place of the
// server: the status, Stripe-Should-Retry as Stripe sets it, a Request-Id,
// the API version, and the error object.
func stripeFault(status int, shouldRetry bool, typ, message string) retryhttptest.Fault {
	return retryhttptest.Respond(status, http.Header{
		"Content-Type":        {"application/json"},
		"Request-Id":          {"req_fault"},
		"Stripe-Version":      {stripe.APIVersion},
		"Stripe-Should-Retry": {strconv.FormatBool(shouldRetry)},
	}, stripeError(typ, message))
}

func writeError(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, []byte(stripeError(typ, message)))
}
