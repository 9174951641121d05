package scenario

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// TestTLSFleetResumesOnlyWithACache checks the one-bad-backend run over
// TLS at concurrency 1, where the counts do not depend on timing: each
// fresh client's first connection is a full handshake; retryhttp's later
// ones, which leave the bad backend, resume at whichever backend they
// reach, and go-retryablehttp's, without a session cache, are full too.
func TestTLSFleetResumesOnlyWithACache(t *testing.T) {
	ip := DefaultInstanceParams()
	ip.Concurrent = 16
	for _, name := range []string{peers.RetryHTTP, peers.RetryableHTTP} {
		t.Run(name, func(t *testing.T) {
			f := balancedFleet(ip.Seed, fleetSpec{n: 5, wire: tlsHTTP1, own: true, sharedKey: true})
			r := RunInstances(context.Background(), lib(t, name), f, fast, ip)
			assert.Greater(t, r.SerialConns, ip.Clients, "connections left at concurrency 1")
			want := Handshakes{Full: ip.Clients, Resumed: r.SerialConns - ip.Clients}
			if name != peers.RetryHTTP {
				want = Handshakes{Full: r.SerialConns}
			}
			assert.Equal(t, want, r.SerialTLS)
		})
	}
}
