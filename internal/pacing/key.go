package pacing

import (
	"hash/maphash"
	"net/http"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// A Key is what requests are paced by: their destination, and the
// partition of it their partition header's values name.
type Key struct {
	// Host is the request's scheme and host, as wire.RequestKey keys them.
	Host wire.HostKey
	// Partition is a hash of the values of the partition header; 0 when
	// there is no partition header or the request has none.
	Partition uint64
}

// KeyOf returns the key of req: its destination and, when partitionHeader
// (canonical) is not "", a hash with seed of that request header's values.
// The values are not kept. It allocates only when the scheme or host has
// upper-case letters.
func KeyOf(req *http.Request, partitionHeader string, seed maphash.Seed) Key {
	k := Key{Host: wire.RequestKey(req)}
	if partitionHeader == "" {
		return k
	}
	switch vs := req.Header[partitionHeader]; len(vs) {
	case 0:
		return k
	case 1:
		k.Partition = maphash.String(seed, vs[0])
	default:
		var h maphash.Hash
		h.SetSeed(seed)
		for _, v := range vs {
			h.WriteString(v)
			h.WriteByte(0)
		}
		k.Partition = h.Sum64()
	}
	if k.Partition == 0 {
		k.Partition = 1 // 0 is for requests without the header
	}
	return k
}
