package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/redisbudget/internal/redisserver"
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
	f, err := newFleet(2, 200, 4)
	if errors.Is(err, redisserver.ErrNotInstalled) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
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
