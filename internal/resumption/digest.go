package resumption

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"strings"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// A Digest checks a body against its Repr-Digest (RFC 9530): the digest
// of the representation, which a body that is the whole representation (a
// 200) must match however many resumes it took.
type Digest struct {
	h    hash.Hash
	want []byte
}

// NewDigest returns a check of the digest in a Repr-Digest field's
// values, nil when it holds none that can be checked: SHA-256 is preferred,
// the cheaper to compute, then SHA-512; other algorithms (and the
// deprecated md5, sha, crc32c...) are ignored, as is a malformed field, or
// a value that is not canonical base64 (stray bits in its padding, a line
// break within).
func NewDigest(values []string) *Digest {
	if len(values) == 0 {
		return nil
	}
	var sha512Sum []byte
	for _, v := range values {
		// A Dictionary: key=:base64:, members separated by commas, each
		// value perhaps followed by ;parameters.
		for _, member := range strings.Split(v, ",") {
			key, value, ok := strings.Cut(wire.TrimOWS(member), "=")
			if !ok {
				continue
			}
			value, _, _ = strings.Cut(value, ";")
			if len(value) < 2 || value[0] != ':' || value[len(value)-1] != ':' ||
				strings.ContainsAny(value, "\r\n") {
				// base64's decoder skips line breaks, which a byte
				// sequence never holds.
				continue
			}
			sum, err := base64.StdEncoding.Strict().DecodeString(value[1 : len(value)-1])
			if err != nil {
				continue
			}
			switch strings.ToLower(key) {
			case "sha-256":
				if len(sum) == sha256.Size {
					return &Digest{h: sha256.New(), want: sum}
				}
			case "sha-512":
				if len(sum) == sha512.Size {
					sha512Sum = sum
				}
			}
		}
	}
	if sha512Sum != nil {
		return &Digest{h: sha512.New(), want: sha512Sum}
	}
	return nil
}

// Write adds p, the next bytes of the body, to the running hash.
func (d *Digest) Write(p []byte) { d.h.Write(p) }

// Matches reports whether the bytes written so far have the digest.
func (d *Digest) Matches() bool {
	return bytes.Equal(d.h.Sum(nil), d.want)
}
