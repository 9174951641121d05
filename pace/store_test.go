package pace

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSharedSetsTheStoreAndRefusesNil(t *testing.T) {
	s := NewMemoryStore()
	var c config.Pace
	Shared(s)(&c)
	assert.Equal(t, s, c.Store)
	assert.PanicsWithValue(t, "pace: Shared: nil Store", func() { Shared(nil) })
}

// TestMemoryStoreMergesAndForgets: the fleet's view sums the demands,
// keeps the latest cut and hold and the least quota, counts the members,
// replaces a member's report with its next, and forgets a report when its
// lease ends.
func TestMemoryStoreMergesAndForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		now := time.Now()
		_, err := s.Exchange(t.Context(), "a", time.Second, []Report{{Key: "https://h", Demand: 10, Cut: now.Add(-time.Second), Quota: 50}})
		require.NoError(t, err)
		fleet, err := s.Exchange(t.Context(), "b", 5*time.Second, []Report{{Key: "https://h", Demand: 30, Cut: now, Hold: now.Add(time.Minute), Quota: 40}})
		require.NoError(t, err)
		require.Len(t, fleet, 1)
		assert.Equal(t, Report{Key: "https://h", Demand: 40, Cut: now, Hold: now.Add(time.Minute), Quota: 40, Members: 2}, fleet[0])

		fleet, _ = s.Exchange(t.Context(), "a", time.Second, []Report{{Key: "https://h", Demand: 1}})
		assert.Equal(t, 31.0, fleet[0].Demand, "a's report replaced")

		time.Sleep(2 * time.Second) // a's lease ends
		fleet, _ = s.Exchange(t.Context(), "b", 5*time.Second, nil)
		require.Len(t, fleet, 1)
		assert.Equal(t, 1, fleet[0].Members)
		assert.Equal(t, 30.0, fleet[0].Demand)
	})
}
