package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the fleet's client processes, as
// the command's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		if err := childMain(os.Args[2:]); err != nil {
			os.Stderr.WriteString("fleet child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestOutage runs a small fleet outage and checks that the shared budget
// holds the fleet to about one bucket while local budgets give each
// process its own.
func TestOutage(t *testing.T) {
	f := startFleet(t, 2, 200, 4)
	var out strings.Builder
	if err := f.outage(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []string{
		"| 1 process | 200 | 100 | 1.500 | 100 | 1.500 |",
		"| 2 processes | 400 | 200 | 1.500 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestDiesWithChurn kills redis-server under a fleet that keeps starting
// processes, and checks that no request fails and that the retries made
// while Redis was down stay within one shared bucket: only the processes
// alive when Redis died, which had heard from it, have fallback shares,
// 2 x 250 tokens. The server counts a retry when it arrives, and the budget
// grants it before the backoff: each worker may also have one retry that
// Redis granted before the kill still on its way.
func TestDiesWithChurn(t *testing.T) {
	f := startFleet(t, 2, 400, 4)
	f.churn, f.down = 50, time.Second
	var out strings.Builder
	if err := f.dies(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if !strings.Contains(out.String(), "| requests that ended in an error | 0 |") {
		t.Error("some requests failed")
	}
	m := regexp.MustCompile(`\| retries while Redis was down \(fallback buckets\) \| (\d+) \|`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("no outage retries in the output")
	}
	if n, _ := strconv.Atoi(m[1]); n > 100+f.processes*f.concurrency {
		t.Errorf("%d retries while Redis was down, more than one bucket's 100 and %d on their way", n, f.processes*f.concurrency)
	}
}

// startFleet returns a fleet closed when the test ends. Without
// redis-server it fails the test, saying how to install it.
func startFleet(t *testing.T, processes, requests, concurrency int) *fleet {
	t.Helper()
	f, err := newFleet(processes, requests, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}
