package awsretry

// This file reads the one thing retryhttp needs from a CBOR document (RFC
// 8949): the "__type" member of the map at its top, where the Smithy RPC v2
// CBOR protocol puts an error's type. It is not a decoder: it walks the
// items of a byte slice it never reads past, skipping what it does not need,
// and gives up on anything malformed, cut short or nested too deep.

// cborMaxDepth bounds the nesting of the items skipped. An error document
// nests two or three levels; each level costs a frame of the stack.
const cborMaxDepth = 32

// CBOR major types (the top three bits of an item's first byte).
const (
	cborUint   = 0
	cborNegint = 1
	cborBytes  = 2
	cborText   = 3
	cborArray  = 4
	cborMap    = 5
	cborTag    = 6
	cborSimple = 7
)

// cborBreak ends an item of indefinite length.
const cborBreak = 0xff

// cborErrorType returns the text string value of the "__type" key of the
// map that doc holds, or "": when doc is not a map, the member is not
// there, is not a text string, or lies past a point where doc is malformed
// or cut short. Members before that point count, as jsonErrorCode reads a
// document cut short.
func cborErrorType(doc []byte) string {
	r := cborReader{b: doc}
	major, n, indefinite, ok := r.head()
	if !ok || major != cborMap {
		return ""
	}
	for i := uint64(0); indefinite || i < n; i++ {
		if indefinite && r.atBreak() {
			return ""
		}
		key, isText, ok := r.text()
		if !ok {
			return ""
		}
		if isText && key == "__type" {
			value, isText, ok := r.text()
			if !ok || !isText {
				return ""
			}
			return value
		}
		if !r.skip(0) {
			return ""
		}
	}
	return ""
}

// A cborReader walks the items of b from off.
type cborReader struct {
	b   []byte
	off int
}

// atBreak reports whether the next byte is a break, and consumes it if so.
func (r *cborReader) atBreak() bool {
	if r.off < len(r.b) && r.b[r.off] == cborBreak {
		r.off++
		return true
	}
	return false
}

// head reads an item's initial byte and argument: the major type, and the
// value, length or count the item carries, or indefinite for an indefinite
// length, which only strings, arrays and maps may have. ok is false when
// the bytes end or are not a well-formed head. The argument may be any
// uint64, 2^64-1 included: a length no slice holds, which the item's reader
// finds cut short.
func (r *cborReader) head() (major byte, arg uint64, indefinite, ok bool) {
	if r.off >= len(r.b) {
		return 0, 0, false, false
	}
	ib := r.b[r.off]
	r.off++
	major, info := ib>>5, ib&0x1f
	switch {
	case info < 24:
		return major, uint64(info), false, true
	case info <= 27:
		size := 1 << (info - 24) // 1, 2, 4 or 8 bytes
		if len(r.b)-r.off < size {
			return 0, 0, false, false
		}
		for _, c := range r.b[r.off : r.off+size] {
			arg = arg<<8 | uint64(c)
		}
		r.off += size
		return major, arg, false, true
	case info == 31 && (major == cborBytes || major == cborText || major == cborArray || major == cborMap):
		return major, 0, true, true
	}
	return 0, 0, false, false // 28 to 30 are reserved; 31 has no meaning elsewhere
}

// text reads the next item. If it is a text string, it returns its
// contents (the chunks of one of indefinite length joined) and isText;
// any other item it skips. ok is false when the item is malformed or cut
// short.
func (r *cborReader) text() (s string, isText, ok bool) {
	start := r.off
	major, n, indefinite, ok := r.head()
	if !ok {
		return "", false, false
	}
	if major != cborText {
		r.off = start
		return "", false, r.skip(0)
	}
	if !indefinite {
		b, ok := r.take(n)
		return string(b), true, ok
	}
	var out []byte
	for !r.atBreak() {
		major, n, indefinite, ok := r.head()
		if !ok || major != cborText || indefinite {
			return "", false, false // a chunk must be a definite text string
		}
		b, ok := r.take(n)
		if !ok {
			return "", false, false
		}
		out = append(out, b...)
	}
	return string(out), true, true
}

// take returns the next n bytes, or false when fewer remain.
func (r *cborReader) take(n uint64) ([]byte, bool) {
	if n > uint64(len(r.b)-r.off) {
		return nil, false
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, true
}

// skip passes over the next item, nested items included, at the given
// depth of nesting. It reports false when the item is malformed, cut short
// or nested deeper than cborMaxDepth. Every item read consumes at least one
// byte, so the work is bounded by len(b) whatever counts the heads claim.
func (r *cborReader) skip(depth int) bool {
	if depth > cborMaxDepth {
		return false
	}
	major, n, indefinite, ok := r.head()
	if !ok {
		return false
	}
	switch major {
	case cborUint, cborNegint:
		return true
	case cborBytes, cborText:
		if !indefinite {
			_, ok := r.take(n)
			return ok
		}
		for !r.atBreak() {
			chunk, m, chunkIndefinite, ok := r.head()
			if !ok || chunk != major || chunkIndefinite {
				return false
			}
			if _, ok := r.take(m); !ok {
				return false
			}
		}
		return true
	case cborArray, cborMap:
		items := n
		if major == cborMap && !indefinite {
			if n > uint64(len(r.b)) {
				return false // more pairs than bytes: cut short
			}
			items = 2 * n
		}
		for i := uint64(0); indefinite || i < items; i++ {
			if indefinite && r.atBreak() {
				return true
			}
			if !r.skip(depth + 1) {
				return false
			}
		}
		return true
	case cborTag:
		return r.skip(depth + 1)
	}
	return true // cborSimple: a simple value or a float, read by head
}
