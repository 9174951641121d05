package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStormLoads(t *testing.T) {
	const clients, capacity = 40, 5
	for i, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			r := storm(s, clients, capacity)
			assert.GreaterOrEqual(t, r.load, clients, "every client sends at least once")
			assert.LessOrEqual(t, r.load, attempts*clients, "no client sends more than %d attempts", attempts)
			assert.LessOrEqual(t, r.succeeded, clients)
			total := 0
			for _, c := range r.counts {
				total += c
			}
			assert.Equal(t, r.load, total, "the histogram counts every arrival")
			if i == 0 {
				assert.Equal(t, clients, r.load, "a plain client sends once")
			}
		})
	}
}

func TestStormWritesSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storm.svg")
	var out bytes.Buffer
	require.NoError(t, run(&out, 20, 5, path))
	assert.Contains(t, out.String(), "amplification")
	assert.Contains(t, out.String(), "peak")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	for _, s := range strategies {
		assert.Contains(t, string(b), s.name)
	}
}
