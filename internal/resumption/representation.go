package resumption

import (
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/resume"
)

// AcceptsRanges reports whether an Accept-Ranges field lists "bytes".
func AcceptsRanges(values []string) bool {
	for _, v := range values {
		// v == "bytes" as nearly every server says it.
		if v == "bytes" || hasToken(v, ",", "bytes") {
			return true
		}
	}
	return false
}

// hasToken reports whether list, items separated by sep, holds token, in
// any case and with optional whitespace around it.
func hasToken(list, sep, token string) bool {
	for list != "" {
		var item string
		item, list, _ = strings.Cut(list, sep)
		if strings.EqualFold(wire.TrimOWS(item), token) {
			return true
		}
	}
	return false
}

// A Representation is what a resumable body's first response said of the
// bytes it carries, against which every part that continues it is checked.
type Representation struct {
	start     int64  // the body's first byte in the Representation: 0, or where a 206 began
	length    int64  // the body's length
	complete  int64  // the Representation's length, -1 when a 206 said "*"
	validator string // the strong ETag, or else the strong Last-Modified
	byETag    bool   // validator is an ETag
	encoding  string // the Content-Encoding
	full      bool   // the body is the whole Representation (a 200)
}

// Length returns the body's length.
func (r *Representation) Length() int64 { return r.length }

// Whole reports whether the body is the whole representation (a 200), as
// a Repr-Digest covers it.
func (r *Representation) Whole() bool { return r.full }

// Describe reads the Representation of resp, the response to req, and
// returns why its body may not be resumed, "" when it may.
func Describe(req *http.Request, resp *http.Response) (Representation, resume.Reason) {
	var r Representation
	if (req.Method != "" && req.Method != http.MethodGet) || (req.Body != nil && req.Body != http.NoBody) {
		return r, resume.Method
	}
	if resp.Uncompressed {
		return r, resume.Decoded
	}
	h := resp.Header
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength <= 0 {
			return r, resume.UnknownLength
		}
		r.length, r.complete, r.full = resp.ContentLength, resp.ContentLength, true
	case http.StatusPartialContent:
		cr, once := wire.OnlyValue(h, "Content-Range")
		first, last, complete, ok := parseContentRange(cr)
		// last-first+1 cannot overflow: parseContentRange holds last
		// below math.MaxInt64.
		if !once || !ok || multipart(h.Get("Content-Type")) || (resp.ContentLength >= 0 && resp.ContentLength != last-first+1) {
			return r, resume.UnknownLength
		}
		r.start, r.length, r.complete = first, last-first+1, complete
	default:
		return r, resume.UnknownLength
	}
	r.encoding = contentCoding(h)
	etag, once := wire.OnlyValue(h, "Etag")
	lm, lmOnce := wire.OnlyValue(h, "Last-Modified")
	switch kind := entityTag(etag); {
	case !once:
		return r, resume.BadValidator
	case kind == tagStrong:
		r.validator, r.byETag = etag, true
	case kind == tagWeak:
		return r, resume.WeakValidator
	case kind == tagMalformed:
		return r, resume.BadValidator
	case !lmOnce:
		return r, resume.BadValidator
	case strongDate(lm, h.Get("Date")):
		// No ETag, or the empty one: the strong Last-Modified validates.
		r.validator = lm
	default:
		return r, resume.NoValidator
	}
	if signedRange(req) {
		return r, resume.SignedRange
	}
	return r, ""
}

// An entity tag's kind, as entityTag reads it.
type tagKind uint8

const (
	tagNone      tagKind = iota // no ETag, or the empty strong one ""
	tagStrong                   // "..."
	tagWeak                     // W/"..."
	tagMalformed                // anything else
)

// entityTag tells what an ETag value is by RFC 9110's grammar (section
// 8.8.3): an optional W/ and a quoted run of etagc, the visible characters
// other than the double quote, and bytes 0x80 and above. The empty strong
// tag "" is no validator: a server that sends it gives every Representation
// the same tag, and a resume pinned to it would be pinned to nothing.
func entityTag(v string) tagKind {
	if v == "" {
		return tagNone
	}
	kind := tagStrong
	if rest, ok := strings.CutPrefix(v, "W/"); ok {
		kind, v = tagWeak, rest
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return tagMalformed
	}
	for i := 1; i < len(v)-1; i++ {
		if c := v[i]; c < 0x21 || c == '"' || c == 0x7f {
			return tagMalformed
		}
	}
	if kind == tagStrong && len(v) == 2 {
		return tagNone
	}
	return kind
}

// strongDate reports whether a Last-Modified value is a strong validator
// by RFC 9110, section 8.8.2.2: the response's Date, from the same server's
// clock, is at least a second later, so that the Representation cannot have
// changed twice within the second that Last-Modified names.
func strongDate(lastModified, date string) bool {
	lm, err := http.ParseTime(lastModified)
	if err != nil {
		return false
	}
	d, err := http.ParseTime(date)
	return err == nil && d.Sub(lm) >= time.Second
}

// contentCoding returns the codings of a response's Content-Encoding fields,
// all of them, so that a second field cannot hide behind the first.
func contentCoding(h http.Header) string {
	return strings.Join(h["Content-Encoding"], ", ")
}

// multipart reports whether a Content-Type is multipart/byteranges, the
// form of a 206 with several ranges.
func multipart(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return strings.HasPrefix(mt, "multipart/")
}

// parseContentRange parses a Content-Range of a 206, "bytes first-last/complete"
// with complete a length or "*" (returned as -1). It holds last below
// math.MaxInt64, so that the length and every offset within the range are
// int64s.
func parseContentRange(v string) (first, last, complete int64, ok bool) {
	unit, rest, found := strings.Cut(wire.TrimOWS(v), " ")
	if !found || !strings.EqualFold(unit, "bytes") {
		return 0, 0, 0, false
	}
	span, total, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, 0, false
	}
	first, okA := wire.Digits(a)
	last, okB := wire.Digits(b)
	// digits saturates at math.MaxInt64; a last byte there (or past it)
	// leaves no int64 for the length, last-first+1, nor for the offset
	// after it, and no body that long can exist.
	if !okA || !okB || last < first || last == math.MaxInt64 {
		return 0, 0, 0, false
	}
	complete = -1
	if total != "*" {
		if complete, ok = wire.Digits(total); !ok || complete <= last {
			return 0, 0, 0, false
		}
	}
	return first, last, complete, true
}

// signedRange reports whether req carries a signature that covers its Range
// header, so that a request for the rest of the body, with a Range of its
// own, would fail to verify: AWS Signature Version 4 (and 4A) and Google's
// V4 signing, whose SignedHeaders list, in the Authorization header or the
// query of a presigned URL, names the headers signed; Azure's Shared Key,
// whose string to sign holds the Range header, empty or not (Shared Key
// Lite's does not); and HTTP Message Signatures (RFC 9421), whose
// Signature-Input lists the components signed.
func signedRange(req *http.Request) bool {
	h := req.Header
	for _, auth := range h["Authorization"] {
		if strings.HasPrefix(auth, "SharedKey ") {
			return true
		}
		if _, list, ok := strings.Cut(auth, "SignedHeaders="); ok {
			list, _, _ = strings.Cut(list, ",")
			if listsRange(list) {
				return true
			}
		}
	}
	if q := req.URL.RawQuery; strings.Contains(q, "SignedHeaders") {
		// Read by hand: url.ParseQuery drops a pair with a raw ";", as an
		// unescaped list of signed headers has.
		for q != "" {
			var pair string
			pair, q, _ = strings.Cut(q, "&")
			name, value, _ := strings.Cut(pair, "=")
			if strings.EqualFold(name, "X-Amz-SignedHeaders") || strings.EqualFold(name, "X-Goog-SignedHeaders") {
				if v, err := url.QueryUnescape(value); err == nil && listsRange(v) {
					return true
				}
			}
		}
	}
	for _, input := range h["Signature-Input"] {
		if strings.Contains(strings.ToLower(input), `"range"`) {
			return true
		}
	}
	return false
}

// listsRange reports whether a SignedHeaders list ("host;range;x-amz-date")
// names the Range header.
func listsRange(list string) bool {
	return hasToken(list, ";", "range")
}

// Continues checks that resp, a 206 answering the request for the rest of
// the body from offset off, continues the body r describes, and returns why
// not, "" when it does.
func (r *Representation) Continues(resp *http.Response, off int64) resume.Reason {
	h := resp.Header
	if resp.Uncompressed || contentCoding(h) != r.encoding {
		return resume.Changed
	}
	key := "Last-Modified"
	if r.byETag {
		key = "Etag"
	}
	if v, once := wire.OnlyValue(h, key); !once || v != r.validator {
		// A server that ignores If-Range (some do) answers ranges of a
		// Representation that has changed: only the validator tells,
		// and a validator given twice tells nothing.
		return resume.Changed
	}
	cr, once := wire.OnlyValue(h, "Content-Range")
	first, last, complete, ok := parseContentRange(cr)
	switch {
	case !once || !ok || multipart(h.Get("Content-Type")):
		return resume.Misaligned
	case complete != r.complete:
		return resume.Changed
	case first != r.start+off || last != r.start+r.length-1:
		return resume.Misaligned
	case resp.ContentLength >= 0 && resp.ContentLength != last-first+1:
		return resume.Misaligned
	}
	return ""
}

// RangeHeader returns the header of the request for the rest of the body
// from offset off, made from h, the header of the request that produced it:
// Range from off to the body's end (open-ended for a whole
// Representation), If-Range with the validator, and, unless the caller
// chose a coding, Accept-Encoding: identity, so that no transport decodes
// the rest.
func (r *Representation) RangeHeader(h http.Header, off int64) http.Header {
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	spec := "bytes=" + strconv.FormatInt(r.start+off, 10) + "-"
	if !r.full {
		spec += strconv.FormatInt(r.start+r.length-1, 10)
	}
	wire.SetField(h, "Range", spec)
	wire.SetField(h, "If-Range", r.validator)
	if !wire.HasField(h, "Accept-Encoding") {
		h["Accept-Encoding"] = []string{"identity"}
	}
	return h
}
