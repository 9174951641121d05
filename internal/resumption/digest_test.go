package resumption

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// digestBody is the body the Repr-Digest values of reprDigestTests are
// computed over.
var digestBody = []byte("the joined body")

var (
	digestSHA256 = sha256.Sum256(digestBody)
	digestSHA512 = sha512.Sum512(digestBody)
	b64          = base64.StdEncoding.EncodeToString
)

// reprDigestTests are the Repr-Digest fields newReprDigest reads, hostile
// ones included, and seed FuzzReprDigest.
var reprDigestTests = []struct {
	name   string
	values []string
	want   bool // a digest is checked
}{
	{"none", nil, false},
	{"sha-256", []string{"sha-256=:" + b64(digestSHA256[:]) + ":"}, true},
	{"sha-512", []string{"sha-512=:" + b64(digestSHA512[:]) + ":"}, true},
	{"both, with parameters and spaces", []string{"sha-512=:" + b64(digestSHA512[:]) + ":;x=1 ,  sha-256=:" + b64(digestSHA256[:]) + ":"}, true},
	{"in two field lines", []string{"unixsum=:AAA=:", "SHA-256=:" + b64(digestSHA256[:]) + ":"}, true},
	{"unknown algorithm", []string{"md5=:" + b64(digestSHA256[:16]) + ":"}, false},
	{"wrong size", []string{"sha-256=:" + b64(digestSHA256[:31]) + ":"}, false},
	{"too long", []string{"sha-256=:" + b64(append(digestSHA256[:], 0)) + ":"}, false},
	{"not base64", []string{"sha-256=:***:"}, false},
	{"not canonical base64", []string{"sha-256=:" + b64(digestSHA256[:])[:42] + "1=:"}, false},
	{"a line break within", []string{"sha-256=:" + b64(digestSHA256[:])[:20] + "\r" + b64(digestSHA256[:])[20:] + ":"}, false},
	{"not a byte sequence", []string{"sha-256=" + b64(digestSHA256[:])}, false},
	{"an empty byte sequence", []string{"sha-256=::"}, false},
	{"a lone colon", []string{"sha-256=:"}, false},
	{"no value", []string{"sha-256"}, false},
	{"empty members", []string{",,, ,"}, false},
	{"a huge member", []string{"sha-256=:" + strings.Repeat("A", 1<<16) + ":"}, false},
}

func TestReprDigest(t *testing.T) {
	for _, tt := range reprDigestTests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDigest(tt.values)
			require.Equal(t, tt.want, d != nil)
			if d == nil {
				return
			}
			d.Write(digestBody[:5])
			d.Write(digestBody[5:])
			assert.True(t, d.Matches())
			d.Write([]byte("x"))
			assert.False(t, d.Matches())
		})
	}
}

// FuzzReprDigest reads arbitrary Repr-Digest fields, and checks that a
// digest found is a SHA-256 or SHA-512 the field holds, so that a body
// matches it exactly when its sum is that value.
func FuzzReprDigest(f *testing.F) {
	for _, tt := range reprDigestTests {
		f.Add(strings.Join(tt.values, "\n"), digestBody)
	}
	f.Fuzz(func(t *testing.T, field string, body []byte) {
		values := strings.Split(field, "\n")
		d := NewDigest(values)
		if d == nil {
			return
		}
		var sum []byte
		switch len(d.want) {
		case sha256.Size:
			s := sha256.Sum256(body)
			sum = s[:]
		case sha512.Size:
			s := sha512.Sum512(body)
			sum = s[:]
		default:
			t.Fatalf("%q: a digest of %d bytes", values, len(d.want))
		}
		if !strings.Contains(field, b64(d.want)) {
			t.Fatalf("%q: a digest the field does not hold", values)
		}
		d.Write(body)
		if d.Matches() != (string(sum) == string(d.want)) {
			t.Fatalf("%q: matches %v for a body whose sum is %x", values, d.Matches(), sum)
		}
	})
}
