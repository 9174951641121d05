package peers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fast = Config{Attempts: 3, Base: time.Millisecond, Cap: 10 * time.Millisecond, NoBudget: true}

// TestEquivalentConfiguration checks that every library makes the same
// number of attempts on a server that always answers 503, and returns the
// last response rather than an error.
func TestEquivalentConfiguration(t *testing.T) {
	for _, lib := range WithBudgets() {
		t.Run(lib.Name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				body, _ := io.ReadAll(r.Body)
				if string(body) != "payload" {
					http.Error(w, "bad body "+string(body), http.StatusBadRequest)
					return
				}
				http.Error(w, "down", http.StatusServiceUnavailable)
			}))
			defer srv.Close()
			base := NewBase()
			defer base.CloseIdleConnections()
			c := &http.Client{Transport: lib.New(base, fast)}

			req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("payload"))
			require.NoError(t, err)
			resp, err := c.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()

			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			want := int64(3)
			if lib.Name == Plain {
				want = 1
			}
			assert.Equal(t, want, calls.Load())
		})
	}
}

func TestSuccessIsOneAttempt(t *testing.T) {
	for _, lib := range All() {
		t.Run(lib.Name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				calls.Add(1)
			}))
			defer srv.Close()
			c := &http.Client{Transport: lib.New(NewBase(), Config{})}
			defer c.CloseIdleConnections()
			resp, err := c.Get(srv.URL)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, int64(1), calls.Load())
		})
	}
}

func TestFullJitterStaysInRange(t *testing.T) {
	for n := 1; n <= 70; n++ {
		d := fullJitter(time.Millisecond, time.Second, n)
		assert.GreaterOrEqual(t, d, time.Duration(0))
		assert.LessOrEqual(t, d, time.Second)
		if n == 1 {
			assert.LessOrEqual(t, d, time.Millisecond)
		}
	}
}
