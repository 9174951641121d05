package main

import (
	"context"
	"os"
	"sync"
	"testing"
)

// The emulators the tests share, each started once, on first use, and
// stopped when the tests end.
var (
	emulatorsMu sync.Mutex
	emulators   = map[string]*emulator{}
)

// sharedEmulator returns the emulator name, starting it if need be. A test
// that needs one fails, never skips, when it cannot start: CI installs
// every emulator.
func sharedEmulator(t *testing.T, name string, setup func(context.Context, string) error) *emulator {
	t.Helper()
	emulatorsMu.Lock()
	defer emulatorsMu.Unlock()
	if e := emulators[name]; e != nil {
		return e
	}
	e, err := startEmulator(name)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		if err := setup(context.Background(), e.URL); err != nil {
			e.Close()
			t.Fatal(err)
		}
	}
	emulators[name] = e
	return e
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, e := range emulators {
		e.Close()
	}
	os.Exit(code)
}
