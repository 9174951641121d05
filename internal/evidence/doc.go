// Package evidence decides where a retry goes. Given each attempt's
// request, it traces the connection that carries it (net/http/httptrace's
// GetConn, GotConn and WroteRequest on an *http.Transport), counts the
// sends net/http makes again on its own, and keeps a bounded table of what
// the hosts' connections did. From that table it decides whether a retry
// leaves the connection that failed, whether a host's attempts are traced
// at all, and, while a host's HTTP/2 connection is being replaced, which
// send dials the new one while the others take turns. Each bound is
// stated where it is kept: ejection ends within ProbeGap failures or
// ProbeInterval, a turn never waits longer than a dial is measured to take.
// It never sends, never retries, never logs and never holds a request
// longer than its turn.
package evidence
