package attempt

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

type fixedPeer netip.AddrPort

func (p fixedPeer) Peer() netip.AddrPort { return netip.AddrPort(p) }

func TestContext(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, 1, Number(ctx))
	assert.Nil(t, Failed(ctx))
	assert.False(t, Peer(ctx).IsValid())

	failed := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:80")}
	peer := netip.MustParseAddrPort("10.0.0.2:80")
	ctx = context.WithValue(WithFailed(WithNumber(ctx, 3), failed), PeerKey{}, fixedPeer(peer))
	assert.Equal(t, 3, Number(ctx))
	assert.Equal(t, failed, Failed(ctx))
	assert.Equal(t, peer, Peer(ctx))
	assert.True(t, HasAddr(failed, failed[0].Addr()))
	assert.False(t, HasAddr(failed, peer.Addr()))
}
