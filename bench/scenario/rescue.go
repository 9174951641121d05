package scenario

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// A Cell is what one library made of one failure: what its caller got, and
// how many times the destination executed the request.
type Cell struct {
	Status     int   // the final status, 0 after an error
	Err        error // the final error, if any
	BodyCut    bool  // the response body ended in an error
	BodyErr    error // the error that ended the body, if any
	BodyWrong  bool  // the caller read bytes the server did not send there
	Executions int64 // handler runs at the destination
}

// OK reports whether the caller got a success with its whole body, as the
// server sent it.
func (c Cell) OK() bool {
	return c.Err == nil && !c.BodyCut && !c.BodyWrong && c.Status >= 200 && c.Status < 300
}

// String formats the cell as "outcome · executions".
func (c Cell) String() string {
	out := strconv.Itoa(c.Status)
	switch {
	case c.Err != nil && errors.Is(c.Err, context.DeadlineExceeded):
		out = "timeout"
	case c.Err != nil:
		out = "error"
	case c.BodyWrong:
		out += ", wrong bytes"
	case c.BodyCut && errors.Is(c.BodyErr, context.DeadlineExceeded):
		out += ", body timeout"
	case c.BodyCut:
		out += ", body cut"
	}
	return out + " · " + strconv.FormatInt(c.Executions, 10)
}

// A RescueRow is one failure a user meets, and what each library made of
// it.
type RescueRow struct {
	Name string
	// Rule names the rule of retryhttp's by which it does not rescue the
	// request, where a peer may: "" when there is none.
	Rule string
	// Once reports that the request may not be executed twice: a POST
	// without a usable idempotency key.
	Once  bool
	Cells map[string]Cell // by library name
}

// Unsafe reports whether lib executed a request that may not be executed
// twice more than once.
func (r RescueRow) Unsafe(lib string) bool { return r.Once && r.Cells[lib].Executions > 1 }

// Rescued reports whether lib got the caller a success without executing
// the request more often than it may be.
func (r RescueRow) Rescued(lib string) bool { return r.Cells[lib].OK() && !r.Unsafe(lib) }

// RescueLibraries returns the columns of the rescue matrix: no retries, the
// peers, and retryhttp.
func RescueLibraries() []peers.Library {
	return []peers.Library{
		{Name: peers.Plain, New: peers.NewPlain},
		{Name: peers.RetryableHTTP, New: peers.NewRetryableHTTP},
		{Name: peers.Failsafe, New: peers.NewFailsafe},
		{Name: peers.AWS, New: peers.NewAWS},
		{Name: peers.RetryHTTP, New: peers.NewRetryHTTP},
	}
}

// rescueConfig is every library's: 3 attempts, its own default delays and
// budget.
var rescueConfig = peers.Config{Attempts: 3}

// cellTimeout bounds one library's request in one row: a library that waits
// for a Retry-After of an hour times out instead.
const cellTimeout = 5 * time.Second

// The rules by which retryhttp declines to rescue a request.
const (
	ruleKeyless     = "a POST without an idempotency key is not resent once the server may have run it"
	ruleRetryAfter  = "a Retry-After beyond the limit (WithRetryAfterLimit, 1 minute) is not waited for"
	ruleNetworkAuth = "511 asks for a login to the network (a captive portal): final"
	ruleTooEarly    = "425 asks for a request sent in TLS early data again after the handshake, and net/http never sends early data: final"
	ruleBaseResend  = "net/http's own resend of a POST without a key after PROTOCOL_ERROR is stopped (ErrResendStopped): the server may have run it"
	ruleWeakETag    = "a weak ETag may name other bytes: the body is not resumed (resume.WeakValidator)"
	ruleNoValidator = "nothing tells this body's rest from another's (no ETag, no Last-Modified a second before Date): not resumed (resume.NoValidator)"
	ruleDecoded     = "net/http decoded the body: its offsets are not the server's, so it is not resumed (resume.Decoded)"
)

// a rescueCase is a row before it is run: how to run one library against
// the failure.
type rescueCase struct {
	name    string
	rule    string
	once    bool
	timeout time.Duration // bounds each cell; 0 for cellTimeout
	run     func(ctx context.Context, lib peers.Library) Cell
}

// RunRescue runs every row of the rescue matrix against every library, at
// most parallel cells at a time, and returns the rows in order.
func RunRescue(ctx context.Context, parallel int) []RescueRow {
	cases := rescueCases()
	libs := RescueLibraries()
	rows := make([]RescueRow, len(cases))
	var mu sync.Mutex
	sem := make(chan struct{}, max(1, parallel))
	var wg sync.WaitGroup
	for i, c := range cases {
		rows[i] = RescueRow{Name: c.name, Rule: c.rule, Once: c.once, Cells: map[string]Cell{}}
		for _, lib := range libs {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				cctx, cancel := context.WithTimeout(ctx, cmp.Or(c.timeout, cellTimeout))
				defer cancel()
				cell := c.run(cctx, lib)
				mu.Lock()
				rows[i].Cells[lib.Name] = cell
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return rows
}

// Rescue runs the rescue matrix and tabulates it.
func Rescue(ctx context.Context, _ Params) []Table {
	rows := RunRescue(ctx, 64)
	return []Table{RescueTable(rows)}
}

// RescueTable tabulates rows: each cell the caller's outcome (a status,
// "error" or "timeout") and the executions at the destination.
func RescueTable(rows []RescueRow) Table {
	libs := RescueLibraries()
	t := Table{
		Title: "rescue: which failures each library turns into a success",
		Note: fmt.Sprintf("%d failures a user meets, over real loopback connections and servers (HTTP/1.1, HTTP/2, "+
			"TLS, a CONNECT proxy). Each library over a fresh base like http.DefaultTransport, 3 attempts, its own "+
			"default delays and budget; each cell is one request, bounded by %v (the stall row's by %v): what the caller got (a status, "+
			"\"error\", \"timeout\"; after a status, \"body cut\" or \"body timeout\" when reading the body failed, "+
			"\"wrong bytes\" when it read bytes the server did not send there) · the executions the destination saw. **Bold**: a success. ⚠: a request that "+
			"may not be executed twice (a POST without a usable key) executed more than once. Where retryhttp gets "+
			"no success, the last column names the rule by which it declines, if one does.", len(rows), cellTimeout, stallCellTimeout),
		Header: []string{"failure"},
	}
	for _, l := range libs {
		t.Header = append(t.Header, l.Name)
	}
	t.Header = append(t.Header, "retryhttp's rule")
	for _, r := range rows {
		cells := []string{r.Name}
		for _, l := range libs {
			s := r.Cells[l.Name].String()
			switch {
			case r.Unsafe(l.Name):
				s = "⚠ " + s
			case r.Rescued(l.Name):
				s = "**" + s + "**"
			}
			cells = append(cells, s)
		}
		rule := ""
		if !r.Rescued(peers.RetryHTTP) {
			rule = r.Rule
		}
		t.Add(append(cells, rule)...)
	}
	return t
}

// freshBase returns a base like http.DefaultTransport, without a proxy.
func freshBase() *http.Transport { return peers.NewBase() }

// send sends req through lib over base and reads the response to its end.
func send(lib peers.Library, base *http.Transport, req *http.Request) Cell {
	return sendBody(lib, base, req, nil)
}

// sendBody is send, and, when want is not nil, compares the body read with
// want: bytes that are not want's at their offset, or a body that ends
// early without an error, make the cell's BodyWrong.
func sendBody(lib peers.Library, base *http.Transport, req *http.Request, want []byte) Cell {
	rt := lib.New(base, rescueConfig)
	defer closeIdle(rt, base)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return Cell{Err: err}
	}
	defer resp.Body.Close()
	c := Cell{Status: resp.StatusCode}
	if want == nil {
		_, c.BodyErr = io.Copy(io.Discard, resp.Body)
	} else {
		var got []byte
		got, c.BodyErr = io.ReadAll(resp.Body)
		c.BodyWrong = !bytes.HasPrefix(want, got) || (c.BodyErr == nil && len(got) != len(want))
	}
	c.BodyCut = c.BodyErr != nil
	return c
}

// closeIdle closes the idle connections of rt, which may keep them in a
// transport of its own (retryhttp sends through a clone of a base with a
// Proxy), and of base.
func closeIdle(rt http.RoundTripper, base *http.Transport) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	base.CloseIdleConnections()
}

// newReq makes a request of method to u with ctx; a POST or PUT carries a
// short body with GetBody, as http.NewRequest makes it.
func newReq(ctx context.Context, method, u string) *http.Request {
	var body io.Reader
	if method != http.MethodGet {
		body = bytes.NewReader(postBody)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		panic(err)
	}
	return req
}
