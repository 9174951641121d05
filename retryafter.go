package retryhttp

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// retryAfterFloor reads the delay the server asked for as of now: the
// Retry-After header, and the millisecond headers some APIs send beside or
// instead of it (retry-after-ms, x-ms-retry-after-ms). It returns the least
// delay the server asked for (0 when absent or unusable), and tooLong=true
// when that delay exceeds limit: the caller must then not retry at all and
// return the response as it is. When tooLong is true floor is 0. When
// several values are given (a header repeated, or more than one of these
// headers), the longest wait counts: waiting less than any of them would
// retry sooner than the server asked. Unusable values are ignored. A
// negative limit counts as zero. An HTTP-date is measured against the
// response's Date header when it has a valid one, so that a client whose
// clock is off still waits as long as the server asked.
func retryAfterFloor(h http.Header, now time.Time, limit time.Duration) (floor time.Duration, tooLong bool) {
	floor = wire.RetryAfter(h, now, 0)
	if floor > max(limit, 0) {
		return 0, true
	}
	return floor, false
}
