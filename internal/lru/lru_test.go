package lru

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInsertLRU(t *testing.T) {
	type entry struct{ used Use }
	use := func(e *entry) *Use { return &e.used }
	var clock Clock
	m := map[string]*entry{}
	for _, k := range []string{"a", "b", "c"} {
		var evicted bool
		m, _, _, evicted = Insert(m, k, &entry{}, 3, &clock, use)
		require.False(t, evicted, "room for %s", k)
	}
	m["a"].used.Touch(&clock) // a is used after c was added: b is the oldest
	next, goneKey, gone, evicted := Insert(m, "d", &entry{}, 3, &clock, use)
	require.True(t, evicted)
	assert.Equal(t, "b", goneKey)
	assert.Same(t, m["b"], gone)
	assert.Len(t, next, 3)
	assert.Contains(t, next, "a")
	assert.NotContains(t, next, "b")
	assert.Len(t, m, 3, "the map inserted into is not modified")
}
