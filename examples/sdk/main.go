// Command sdk shows retryhttp as the transport of real SDKs, each with its
// own retries turned off, calling local implementations of their APIs
// behind a proxy (retryhttptest.NewProxy) that fails in a different way for each
// call: DynamoDB is dynalite (npm), S3 is gofakes3 (a Go module); GitHub
// and Stripe, which no one implements, are small fakes whose errors are
// shaped as the vendors document them.
//
//   - Stripe's Go client (stripe.go): POSTs carry an Idempotency-Key and
//     are resent; Stripe-Should-Retry is followed.
//   - The AWS SDK for Go v2, DynamoDB (dynamodb.go): every call is a POST;
//     reads are declared resendable, writes per call where that is safe;
//     throttling 400s, named only in the JSON body, are retried as
//     throttles.
//   - The AWS SDK for Go v2, S3 (s3.go): an upload's body is resent byte
//     for byte under its signature; SlowDown is paced as a throttle; bodies
//     over the buffer limit are sent once; a download whose body is cut is
//     resumed where it broke, and the SDK's checksum validation passes.
//   - go-github (github.go): a 502 is retried, and a 403 secondary rate
//     limit after its Retry-After.
//
// Run it with (dynalite needs Node.js 20 or later):
//
//	npm ci --prefix emulators/dynalite
//	go run .
//
// and the demonstration of one Transport under the OpenAI, Anthropic, S3
// and GitHub clients at once, while one provider throttles everything
// (onelayer.go), with:
//
//	go run . onelayer
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "onelayer" {
		if err := runOneLayer(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sdk onelayer:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		os.Exit(1)
	}
}

// run shows each SDK in turn, writing to w what happened. opts are added
// to the options of every Transport it makes.
func run(w io.Writer, opts ...retryhttp.Option) error {
	sections := []func(io.Writer, ...retryhttp.Option) error{runStripe, runDynamoDB, runS3, runGitHub}
	for i, section := range sections {
		if i > 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, strings.Repeat("-", 72))
			fmt.Fprintln(w)
		}
		if err := section(w, opts...); err != nil {
			return err
		}
	}
	return nil
}

// printRetries returns an option that writes each retry to w, and each
// resume of a response body.
func printRetries(w io.Writer) retryhttp.Option {
	return retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
		if e.Resume {
			fmt.Fprintf(w, "   retryhttp: body failed at byte %d: %s; resuming there in %v\n",
				e.Offset, errText(e.Err), e.Delay.Round(time.Millisecond))
			return
		}
		fmt.Fprintf(w, "   retryhttp: attempt %d %s; retrying in %v\n",
			e.Attempt, outcome(e), e.Delay.Round(time.Millisecond))
	})
}

// outcome describes a failed attempt: "got 503", "got 400, a throttle", or
// "failed: " and the error. Of a network error it names only the operation
// and its cause, not the addresses, which change from run to run.
func outcome(e retryhttp.RetryEvent) string {
	if e.Err == nil {
		s := fmt.Sprintf("got %d", e.StatusCode)
		if e.Verdict.Throttle {
			s += ", a throttle"
		}
		return s
	}
	return "failed: " + errText(e.Err)
}

// errText describes err; of a network error, only the operation and its
// cause.
func errText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err.Error()
	}
	return err.Error()
}

// attempted says "1 attempt (500)", "2 attempts (reset, pass)".
func attempted(rec retryhttptest.Request) string {
	s := fmt.Sprintf("%d attempt", rec.Attempts)
	if rec.Attempts != 1 {
		s += "s"
	}
	return s + " (" + strings.Join(rec.Outcomes, ", ") + ")"
}

// summary says how the retries of a section went.
func summary(w io.Writer, calls, attempts int, rest string) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "In all: %d SDK calls, %d attempts, %s.\n", calls, attempts, rest)
}
