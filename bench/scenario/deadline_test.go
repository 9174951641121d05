package scenario

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// TestDeadlinePropagationStopsWorkBelow runs the chain A -> B -> C -> D -> E
// with E failing after 400 ms of work it does not stop when its caller
// leaves, and A giving its call to B a second: without the deadline carried
// down, D's third attempt starts 800 to 815 ms into A's second, and E works
// on it for 200 ms after A has stopped waiting; with it, D does not start
// that attempt, and the chain answers A about 200 ms before A's deadline.
// The times are long and the margins (10 ms a layer) wide against the
// scheduling delays of two busy cores, and every decision is far from its
// edge: D's second attempt leaves E 160 ms more than its work, its third
// lacks more than 200 ms. What is tested is that the deadline travels and
// is heeded, not that the default margin suffices on a loaded machine (the
// scenario's table shows that).
func TestDeadlinePropagationStopsWorkBelow(t *testing.T) {
	p := DeadlineParams{
		Warm: 10, Requests: 24, Concurrency: 8, // 20 answers of E known to D before those measured
		Deadline: time.Second, Fail: 400 * time.Millisecond,
		Config: peers.Config{Attempts: 3, Base: 5 * time.Millisecond, Cap: 100 * time.Millisecond, NoBudget: true},
		Margin: 10 * time.Millisecond,
	}
	e := EndBehaviour{Name: "E fails, stubborn", Work: p.Fail, Status: 503, Stubborn: true}
	setups := ChainSetups()
	with := RunDeadlineChain(context.Background(), setups[3], e, p)
	without := RunDeadlineChain(context.Background(), setups[2], e, p)
	t.Logf("with the deadline carried: %+v", with)
	t.Logf("without: %+v", without)
	n := p.Requests

	// Without, the measure bites: D's third attempt cannot finish, and E
	// works on it after A has stopped waiting.
	assert.GreaterOrEqual(t, without.Doomed, n/2, "retries that could not finish, without")
	assert.GreaterOrEqual(t, without.LateWork, time.Duration(n)*100*time.Millisecond, "work below A after it stopped waiting, without")

	assert.LessOrEqual(t, with.LateAtE, 1, "E calls after A stopped waiting")
	assert.LessOrEqual(t, with.LateWork, time.Duration(n)*10*time.Millisecond, "work below A after it stopped waiting")
	assert.LessOrEqual(t, with.Doomed, n/6, "retries that could not finish")
	// Most answers reach A in time; a loaded machine can delay a few past
	// the deadline, so the bound leaves room for them.
	assert.GreaterOrEqual(t, with.InTime, n/2, "answers to A before its deadline")
	assert.Equal(t, 2*n, with.EAttempts, "E's two attempts that could finish, no third")
}
