package awsretry

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The error responses of the Smithy protocol tests for rpcv2Cbor
// (smithy-protocol-tests/model/rpcv2Cbor/errors.smithy and
// smithy-aws-protocol-tests/model/rpcv2Cbor/query-compatible.smithy), by
// test ID: the bodies as the tests give them, in base64.
var smithyCBORErrors = []struct {
	id, body, want string
}{
	{"RpcV2CborInvalidGreetingError",
		"v2ZfX3R5cGV4LnNtaXRoeS5wcm90b2NvbHRlc3RzLnJwY3YyQ2JvciNJbnZhbGlkR3JlZXRpbmdnTWVzc2FnZWJIaf8=",
		"smithy.protocoltests.rpcv2Cbor#InvalidGreeting"},
	{"RpcV2CborComplexError",
		"v2ZfX3R5cGV4K3NtaXRoeS5wcm90b2NvbHRlc3RzLnJwY3YyQ2JvciNDb21wbGV4RXJyb3JoVG9wTGV2ZWxpVG9wIGxldmVsZk5lc3RlZL9jRm9vY2Jhcv//",
		"smithy.protocoltests.rpcv2Cbor#ComplexError"},
	{"RpcV2CborEmptyComplexError",
		"v2ZfX3R5cGV4K3NtaXRoeS5wcm90b2NvbHRlc3RzLnJwY3YyQ2JvciNDb21wbGV4RXJyb3L/",
		"smithy.protocoltests.rpcv2Cbor#ComplexError"},
	{"QueryCompatibleRpcV2CborNoCustomCodeError",
		"uQACZl9fdHlwZXgtYXdzLnByb3RvY29sdGVzdHMucnBjdjJjYm9yI05vQ3VzdG9tQ29kZUVycm9yZ21lc3NhZ2ViSGk=",
		"aws.protocoltests.rpcv2cbor#NoCustomCodeError"},
	{"QueryCompatibleRpcV2CborCustomCodeError",
		"uQACZl9fdHlwZXgrYXdzLnByb3RvY29sdGVzdHMucnBjdjJjYm9yI0N1c3RvbUNvZGVFcnJvcmdtZXNzYWdlYkhp",
		"aws.protocoltests.rpcv2cbor#CustomCodeError"},
}

// cb builds CBOR documents for the tests, an item at a time.
type cb []byte

// head appends an item's head with the shortest argument.
func (c cb) head(major byte, n uint64) cb {
	m := major << 5
	switch {
	case n < 24:
		return append(c, m|byte(n))
	case n <= 0xff:
		return append(c, m|24, byte(n))
	case n <= 0xffff:
		return append(c, m|25, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(c, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	c = append(c, m|27)
	for i := 7; i >= 0; i-- {
		c = append(c, byte(n>>(8*i)))
	}
	return c
}

func (c cb) text(s string) cb  { return append(c.head(cborText, uint64(len(s))), s...) }
func (c cb) bytes(s string) cb { return append(c.head(cborBytes, uint64(len(s))), s...) }
func (c cb) raw(b ...byte) cb  { return append(c, b...) }

// cloudWatchThrottle is a CloudWatch-shaped throttling error: a map of
// __type and message, as Smithy RPC v2 CBOR encodes an error.
var cloudWatchThrottle = []byte(cb{}.head(cborMap, 2).
	text("__type").text("com.amazonaws.cloudwatch#Throttling").
	text("message").text("Rate exceeded"))

// cborNested returns a map whose first member nests depth arrays, and
// whose second is "__type": "Deep".
func cborNested(depth int) []byte {
	c := cb{}.head(cborMap, 2).text("nested")
	for range depth {
		c = c.head(cborArray, 1)
	}
	return c.head(cborUint, 0).text("__type").text("Deep")
}

// cborMaxArg is the head of an item of the major type whose argument is
// 2^64-1, in 8 bytes: a length no document holds.
func cborMaxArg(major byte) []byte {
	return []byte{major<<5 | 27, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}

// cborErrorTypeTests is shared by TestCBORErrorType and the seed corpus of
// FuzzCBORErrorType.
var cborErrorTypeTests = []struct {
	name string
	doc  []byte
	want string
}{
	{"CloudWatch throttle", cloudWatchThrottle, "com.amazonaws.cloudwatch#Throttling"},
	{"after every kind of item", cb{}.head(cborMap, 9).
		text("u").head(cborUint, 1<<40).
		text("n").head(cborNegint, 500).
		text("b").bytes("\x00\xff").
		text("a").head(cborArray, 2).raw(0xf5, 0xf6).           // true, null
		text("m").head(cborMap, 1).head(cborUint, 1).text("x"). // a key that is not text
		text("t").head(cborTag, 1).head(cborUint, 1700000000).  // epoch time
		text("f").raw(0xfb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0).      // 1.0 as a double
		head(cborUint, 7).text("a key that is an integer").
		text("__type").text("Found"), "Found"},
	{"indefinite strings and containers before it", cb{}.raw(0xbf).
		raw(0x7f).text("ke").text("y").raw(cborBreak). // the key "key", in chunks
		raw(0x9f).raw(0x5f).bytes("ab").raw(cborBreak).raw(cborBreak).
		text("__type").raw(0x7f).text("Throt").text("tling").raw(cborBreak).
		raw(cborBreak), "Throttling"},
	{"key in chunks", cb{}.head(cborMap, 1).raw(0x7f).text("__").text("type").raw(cborBreak).text("T"), "T"},
	{"cut short after __type", cloudWatchThrottle[:len(cloudWatchThrottle)-3], "com.amazonaws.cloudwatch#Throttling"},
	{"cut short in __type", cloudWatchThrottle[:12], ""},
	{"__type not text", cb{}.head(cborMap, 1).text("__type").bytes("Throttling"), ""},
	{"__type nested", cb{}.head(cborMap, 1).text("error").head(cborMap, 1).text("__type").text("Throttling"), ""},
	{"an array", cb{}.head(cborArray, 2).text("__type").text("Throttling"), ""},
	{"a text string", cb{}.text("__type"), ""},
	{"empty", nil, ""},
	{"empty map", cb{}.head(cborMap, 0), ""},
	{"indefinite map ended", cb{}.raw(0xbf, cborBreak).text("__type").text("After"), ""},
	{"more pairs than bytes", cb{}.head(cborMap, 1<<62).text("a").head(cborMap, 1<<62).text("__type").text("X"), ""},
	{"string longer than the document", cb{}.head(cborMap, 2).text("a").head(cborText, 1<<63).text("__type").text("X"), ""},
	{"array longer than the document", cb{}.head(cborMap, 2).text("a").head(cborArray, 1<<63).text("__type").text("X"), ""},
	{"reserved argument", cb{}.head(cborMap, 2).text("a").raw(0x1c).text("__type").text("X"), ""},
	{"indefinite integer", cb{}.head(cborMap, 2).text("a").raw(0x1f).text("__type").text("X"), ""},
	{"stray break", cb{}.head(cborMap, 2).text("a").raw(cborBreak).text("__type").text("X"), ""},
	{"chunk of another type", cb{}.head(cborMap, 1).raw(0x7f).bytes("__type").raw(cborBreak).text("X"), ""},
	{"nested chunk of indefinite length", cb{}.head(cborMap, 1).raw(0x7f, 0x7f).raw(cborBreak).raw(cborBreak).text("X"), ""},
	{"nested too deep", cborNested(cborMaxDepth + 2), ""},
	{"nested at the limit", cborNested(cborMaxDepth), "Deep"},
	{"nested ten thousand deep", cborNested(10000), ""},

	// A length or count of 2^64-1 is cut short, never an indefinite
	// length that a break would end.
	{"text of 2^64-1 bytes in chunks", cb{}.head(cborMap, 1).raw(cborMaxArg(cborText)...).text("__type").raw(cborBreak).text("Y"), ""},
	{"value of 2^64-1 bytes in chunks", cb{}.head(cborMap, 1).text("__type").raw(cborMaxArg(cborText)...).text("Y").raw(cborBreak), ""},
	{"bytes of 2^64-1 bytes before a break", cb{}.head(cborMap, 2).text("a").raw(cborMaxArg(cborBytes)...).bytes("b").raw(cborBreak).text("__type").text("X"), ""},
	{"array of 2^64-1 items before a break", cb{}.head(cborMap, 2).text("a").raw(cborMaxArg(cborArray)...).raw(cborBreak).text("__type").text("X"), ""},
	{"map of 2^64-1 pairs before a break", cb{}.head(cborMap, 2).text("a").raw(cborMaxArg(cborMap)...).raw(cborBreak).text("__type").text("X"), ""},
	{"an integer of 2^64-1", cb{}.head(cborMap, 2).text("a").raw(cborMaxArg(cborUint)...).text("__type").text("X"), "X"},
	{"a tag of 2^64-1", cb{}.head(cborMap, 2).text("a").raw(cborMaxArg(cborTag)...).head(cborUint, 0).text("__type").text("X"), "X"},
	// The members of a map cut short count up to the cut, whatever the
	// count it claims.
	{"a map of 2^64-2 pairs, cut short", cb{}.raw(0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe).text("__type").text("X"), "X"},
	{"a map of 2^64-1 pairs, cut short", cb{}.raw(cborMaxArg(cborMap)...).text("__type").text("X"), "X"},
	{"a map of 2^64-1 pairs ended by a break", cb{}.raw(cborMaxArg(cborMap)...).raw(cborBreak).text("__type").text("X"), ""},
	{"a type of invalid UTF-8", cb{}.head(cborMap, 1).text("__type").text("\xff\xfe"), "\xff\xfe"},
	{"a key repeated a thousand times", func() cb {
		c := cb{}.head(cborMap, 1001)
		for range 1000 {
			c = c.text("a").text("b")
		}
		return c.text("__type").text("Last")
	}(), "Last"},
}

func TestCBORErrorType(t *testing.T) {
	for _, tt := range smithyCBORErrors {
		t.Run(tt.id, func(t *testing.T) {
			doc, err := base64.StdEncoding.DecodeString(tt.body)
			require.NoError(t, err)
			assert.Equal(t, tt.want, cborErrorType(doc))
		})
	}
	for _, tt := range cborErrorTypeTests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, cborErrorType(tt.doc))
		})
	}
}

// FuzzCBORErrorType checks that cborErrorType reads a type only from the
// bytes given, that bytes after a document it read a type from change
// nothing, that a type written by the helper reads back, and that
// ResponseErrorCode reads the same through classify.Peek, the body intact.
func FuzzCBORErrorType(f *testing.F) {
	for _, tt := range smithyCBORErrors {
		doc, _ := base64.StdEncoding.DecodeString(tt.body)
		f.Add(doc, "")
	}
	for _, tt := range cborErrorTypeTests {
		f.Add(tt.doc, tt.want)
	}
	f.Fuzz(func(t *testing.T, doc []byte, typ string) {
		got := cborErrorType(doc)
		if !isSubsequence(got, doc) {
			t.Fatalf("a type %q whose bytes are not in the document, in order", got)
		}
		if got != "" {
			if again := cborErrorType(append(doc[:len(doc):len(doc)], 0xff, 0x00, 0xbf)); again != got {
				t.Fatalf("type %q, but %q with bytes after the document", got, again)
			}
		}
		for _, written := range [][]byte{
			cb{}.head(cborMap, 1).text("__type").text(typ),
			cb{}.raw(0xbf).text("__type").text(typ).raw(cborBreak),
			cb{}.head(cborMap, 2).text("message").bytes(string(doc)).text("__type").text(typ),
		} {
			if got := cborErrorType(written); got != typ {
				t.Fatalf("%x: a map of __type %q read as %q", written, typ, got)
			}
		}
		// In a synctest bubble, the peek's 100 ms wait ends only once the
		// read ahead is blocked, however busy the machine.
		synctest.Test(t, func(t *testing.T) {
			resp := &http.Response{StatusCode: 400, Header: http.Header{"Smithy-Protocol": {"rpc-v2-cbor"}},
				Body: io.NopCloser(bytes.NewReader(doc))}
			if code := ResponseErrorCode(resp); len(doc) <= wire.PeekLimit && code != awsCodeName(got) {
				t.Fatalf("AWSResponseErrorCode = %q, cborErrorType = %q", code, got)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(body, doc) {
				t.Fatalf("the body after the peek: %q, %v; want %q", body, err, doc)
			}
		})
	})
}

func TestAWSResponseErrorCodeCBOR(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		status int
		want   string
	}{
		{"Smithy-Protocol and Content-Type", http.Header{"Smithy-Protocol": {"rpc-v2-cbor"}, "Content-Type": {"application/cbor"}}, 400, "Throttling"},
		{"Smithy-Protocol alone", http.Header{"Smithy-Protocol": {"rpc-v2-cbor"}}, 400, "Throttling"},
		{"Content-Type alone", http.Header{"Content-Type": {"application/cbor"}}, 400, "Throttling"},
		{"query error header first", http.Header{"Smithy-Protocol": {"rpc-v2-cbor"}, "X-Amzn-Query-Error": {"Customized;Sender"}}, 400, "Customized"},
		{"another protocol", http.Header{"Smithy-Protocol": {"rpc-v3"}, "Content-Type": {"application/octet-stream"}}, 400, ""},
		{"no content type, not sniffed", http.Header{}, 400, ""},
		{"success", http.Header{"Smithy-Protocol": {"rpc-v2-cbor"}}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: tt.header, Body: testkit.NewCountingBody(string(cloudWatchThrottle))}
			assert.Equal(t, tt.want, ResponseErrorCode(resp))
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, cloudWatchThrottle, got, "the caller gets the body byte for byte")
		})
	}
}

// isSubsequence reports whether the bytes of s appear in b in order.
func isSubsequence(s string, b []byte) bool {
	for i := 0; i < len(s); i++ {
		j := bytes.IndexByte(b, s[i])
		if j < 0 {
			return false
		}
		b = b[j+1:]
	}
	return true
}
