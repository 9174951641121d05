package pacing

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/maphash"
	"net/http"
	"strconv"
	"strings"

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

// StableKeyOf returns the key of req as KeyOf does, its partition hashed
// the same in every process (the first 8 bytes of a SHA-256 of the
// values), for a pace shared by a fleet.
func StableKeyOf(req *http.Request, partitionHeader string) Key {
	k := Key{Host: wire.RequestKey(req)}
	if partitionHeader == "" {
		return k
	}
	vs := req.Header[partitionHeader]
	if len(vs) == 0 {
		return k
	}
	h := sha256.New()
	for _, v := range vs {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	k.Partition = binary.BigEndian.Uint64(h.Sum(sum[:0]))
	if k.Partition == 0 {
		k.Partition = 1
	}
	return k
}

// String returns k as a fleet names it: "scheme://host", and "#" with its
// partition in hexadecimal when it has one.
func (k Key) String() string {
	s := k.Host.Scheme + "://" + k.Host.Host
	if k.Partition != 0 {
		s += "#" + strconv.FormatUint(k.Partition, 16)
	}
	return s
}

// ParseKey reads a key as String writes it, and reports false for
// anything else: a Store's garbage is not a key.
func ParseKey(s string) (Key, bool) {
	if len(s) > 512 {
		return Key{}, false
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return Key{}, false
	}
	host, part, hasPart := strings.Cut(rest, "#")
	if host == "" || strings.ContainsAny(host, "/#") {
		return Key{}, false
	}
	k := Key{Host: wire.MakeKey(scheme, host)}
	if k.Host.Scheme != scheme || k.Host.Host != host {
		return Key{}, false // not as String writes it
	}
	if hasPart {
		p, err := strconv.ParseUint(part, 16, 64)
		if err != nil || p == 0 || strconv.FormatUint(p, 16) != part {
			return Key{}, false
		}
		k.Partition = p
	}
	return k, true
}
