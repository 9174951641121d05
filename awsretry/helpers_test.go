package awsretry

import (
	"net/http"

	"github.com/retryhttp/retryhttp/internal/testkit"
)

// wasPeeked reports whether classify.Peek replaced resp's body, which the
// tests make a *testkit.CountingBody.
func wasPeeked(resp *http.Response) bool {
	_, made := resp.Body.(*testkit.CountingBody)
	return !made
}
