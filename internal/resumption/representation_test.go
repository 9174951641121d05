package resumption

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/stretchr/testify/assert"
)

const (
	lastModified = "Tue, 14 Nov 2023 22:13:20 GMT"
	sameSecond   = "Tue, 14 Nov 2023 22:13:20 GMT"
	aSecondLater = "Tue, 14 Nov 2023 22:13:21 GMT"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		name   string
		status int
		fields map[string]string
		change func(*http.Request, *http.Response)
		want   resume.Reason
		rep    Representation
	}{
		{name: "strong ETag", status: 200,
			rep: Representation{length: 100, complete: 100, validator: `"v1"`, byETag: true, full: true}},
		{name: "strong Last-Modified", status: 200, fields: map[string]string{"Etag": "", "Last-Modified": lastModified, "Date": aSecondLater},
			rep: Representation{length: 100, complete: 100, validator: lastModified, full: true}},
		{name: "Last-Modified in the second of Date", status: 200, fields: map[string]string{"Etag": "", "Last-Modified": lastModified, "Date": sameSecond},
			want: resume.NoValidator},
		{name: "Last-Modified without Date", status: 200, fields: map[string]string{"Etag": "", "Last-Modified": lastModified},
			want: resume.NoValidator},
		{name: "no validator", status: 200, fields: map[string]string{"Etag": ""}, want: resume.NoValidator},
		{name: "weak ETag", status: 200, fields: map[string]string{"Etag": `W/"v1"`}, want: resume.WeakValidator},
		{name: "weak ETag beside a strong Last-Modified", status: 200,
			fields: map[string]string{"Etag": `W/"v1"`, "Last-Modified": lastModified, "Date": aSecondLater}, want: resume.WeakValidator},
		{name: "a coding the caller asked for", status: 200, fields: map[string]string{"Content-Encoding": "gzip"},
			rep: Representation{length: 100, complete: 100, validator: `"v1"`, byETag: true, encoding: "gzip", full: true}},
		{name: "decoded", status: 200, change: func(_ *http.Request, r *http.Response) { r.Uncompressed = true }, want: resume.Decoded},
		{name: "no length", status: 200, change: func(_ *http.Request, r *http.Response) { r.ContentLength = -1 }, want: resume.UnknownLength},
		{name: "POST", status: 200, change: func(q *http.Request, _ *http.Response) { q.Method = http.MethodPost }, want: resume.Method},
		{name: "GET with a body", status: 200, change: func(q *http.Request, _ *http.Response) { q.Body = http.NoBody; q.Body = nopBody{} }, want: resume.Method},
		{name: "the caller's range", status: 206, fields: map[string]string{"Content-Range": "bytes 1000-1099/5000"},
			rep: Representation{start: 1000, length: 100, complete: 5000, validator: `"v1"`, byETag: true}},
		{name: "a range of unknown total", status: 206, fields: map[string]string{"Content-Range": "bytes 1000-1099/*"},
			rep: Representation{start: 1000, length: 100, complete: -1, validator: `"v1"`, byETag: true}},
		{name: "a range whose length disagrees", status: 206, fields: map[string]string{"Content-Range": "bytes 1000-1199/5000"}, want: resume.UnknownLength},
		{name: "several ranges", status: 206, fields: map[string]string{"Content-Type": "multipart/byteranges; boundary=x"}, want: resume.UnknownLength},
		{name: "two ETag fields", status: 200, change: func(_ *http.Request, r *http.Response) { r.Header["Etag"] = []string{`"v0"`, `"v1"`} },
			want: resume.BadValidator},
		{name: "a malformed ETag", status: 200, fields: map[string]string{"Etag": `"v1", "v2"`}, want: resume.BadValidator},
		{name: "an unquoted ETag", status: 200, fields: map[string]string{"Etag": `v1`}, want: resume.BadValidator},
		{name: "the empty ETag alone", status: 200, fields: map[string]string{"Etag": `""`}, want: resume.NoValidator},
		{name: "the empty ETag beside a strong Last-Modified", status: 200, fields: map[string]string{"Etag": `""`, "Last-Modified": lastModified, "Date": aSecondLater},
			rep: Representation{length: 100, complete: 100, validator: lastModified, full: true}},
		{name: "two Last-Modified fields", status: 200, fields: map[string]string{"Etag": "", "Date": aSecondLater},
			change: func(_ *http.Request, r *http.Response) {
				r.Header["Last-Modified"] = []string{lastModified, lastModified}
			},
			want: resume.BadValidator},
		{name: "two Content-Range fields", status: 206, change: func(_ *http.Request, r *http.Response) {
			r.Header["Content-Range"] = []string{"bytes 0-99/100", "bytes 0-99/100"}
		}, want: resume.UnknownLength},
		{name: "a range to the largest int64, no Content-Length", status: 206, fields: map[string]string{"Content-Range": "bytes 0-9223372036854775807/*"},
			change: func(_ *http.Request, r *http.Response) { r.ContentLength = -1 }, want: resume.UnknownLength},
		{name: "a range past the largest int64, no Content-Length", status: 206, fields: map[string]string{"Content-Range": "bytes 0-99999999999999999999999/*"},
			change: func(_ *http.Request, r *http.Response) { r.ContentLength = -1 }, want: resume.UnknownLength},
		{name: "a range ending before the largest int64, no Content-Length", status: 206, fields: map[string]string{"Content-Range": "bytes 0-9223372036854775806/*"},
			change: func(_ *http.Request, r *http.Response) { r.ContentLength = -1 },
			rep:    Representation{length: math.MaxInt64, complete: -1, validator: `"v1"`, byETag: true}},
		{name: "signed Range", status: 200, change: func(q *http.Request, _ *http.Response) {
			q.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-date, Signature=abc")
		}, want: resume.SignedRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, resp := testkit.Resumable(tt.status, tt.fields)
			if tt.change != nil {
				tt.change(req, resp)
			}
			rep, why := Describe(req, resp)
			assert.Equal(t, tt.want, why)
			if tt.want == "" {
				assert.Equal(t, tt.rep, rep)
			}
		})
	}
}

type nopBody struct{}

func (nopBody) Read([]byte) (int, error) { return 0, nil }
func (nopBody) Close() error             { return nil }

// contentRangeTests is shared by TestParseContentRange and the seed corpus
// of FuzzParseContentRange.
var contentRangeTests = []struct {
	in                    string
	first, last, complete int64
	ok                    bool
}{
	{"bytes 0-99/100", 0, 99, 100, true},
	{"bytes 100-199/1000", 100, 199, 1000, true},
	{"Bytes 5-5/6", 5, 5, 6, true},
	{" bytes 1-2/* ", 1, 2, -1, true},
	{"bytes 0-99/99", 0, 0, 0, false}, // past the end
	{"bytes 5-4/10", 0, 0, 0, false},
	{"bytes */100", 0, 0, 0, false}, // a 416's
	{"bytes -1-5/10", 0, 0, 0, false},
	{"bytes 1-5", 0, 0, 0, false},
	{"items 1-5/10", 0, 0, 0, false},
	{"bytes 1-5/10x", 0, 0, 0, false},
	{"bytes 99999999999999999999-1/2", 0, 0, 0, false},
	{"bytes 0-9223372036854775807/*", 0, 0, 0, false},     // no length fits an int64
	{"bytes 0-99999999999999999999999/*", 0, 0, 0, false}, // saturated: the same
	{"bytes 0-9223372036854775806/9223372036854775807", 0, math.MaxInt64 - 1, math.MaxInt64, true},
	{"bytes 9223372036854775806-9223372036854775806/*", math.MaxInt64 - 1, math.MaxInt64 - 1, -1, true},
	{"", 0, 0, 0, false},
}

func TestParseContentRange(t *testing.T) {
	for _, tt := range contentRangeTests {
		first, last, complete, ok := parseContentRange(tt.in)
		assert.Equal(t, tt.ok, ok, "%q", tt.in)
		if tt.ok {
			assert.Equal(t, []int64{tt.first, tt.last, tt.complete}, []int64{first, last, complete}, "%q", tt.in)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, tt := range contentRangeTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		first, last, complete, ok := parseContentRange(in)
		if !ok {
			return
		}
		if first < 0 || last < first || last == math.MaxInt64 || (complete != -1 && complete <= last) {
			t.Fatalf("%q: accepted %d-%d/%d", in, first, last, complete)
		}
	})
}

func TestSignedRange(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		query  string
		want   bool
	}{
		{"unsigned", nil, "", false},
		{"a bearer token", http.Header{"Authorization": {"Bearer abc"}}, "", false},
		{"SigV4 without range", http.Header{"Authorization": {"AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=y"}}, "", false},
		{"SigV4 with range", http.Header{"Authorization": {"AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host;range;x-amz-date, Signature=y"}}, "", true},
		{"SigV4A with range", http.Header{"Authorization": {"AWS4-ECDSA-P256-SHA256 Credential=x, SignedHeaders=host;Range, Signature=y"}}, "", true},
		{"Google V4 with range", http.Header{"Authorization": {"GOOG4-HMAC-SHA256 Credential=x, SignedHeaders=host;range, Signature=y"}}, "", true},
		{"a header named like range", http.Header{"Authorization": {"AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host;x-range, Signature=y"}}, "", false},
		{"presigned S3 URL with range", nil, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-SignedHeaders=host%3Brange&X-Amz-Signature=z", true},
		{"presigned S3 URL", nil, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-SignedHeaders=host&X-Amz-Signature=z", false},
		{"signed GCS URL with range", nil, "X-Goog-SignedHeaders=host;range", true},
		{"Azure Shared Key", http.Header{"Authorization": {"SharedKey account:c2lnbmF0dXJl"}}, "", true},
		{"Azure Shared Key Lite", http.Header{"Authorization": {"SharedKeyLite account:c2lnbmF0dXJl"}}, "", false},
		{"Azure SAS", nil, "sv=2024-05-04&sig=abc", false},
		{"HTTP Message Signature over range", http.Header{"Signature-Input": {`sig1=("@method" "@path" "range");created=1`}}, "", true},
		{"HTTP Message Signature", http.Header{"Signature-Input": {`sig1=("@method" "@path");created=1`}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: "h", Path: "/k", RawQuery: tt.query}, Header: tt.header}
			if req.Header == nil {
				req.Header = http.Header{}
			}
			assert.Equal(t, tt.want, signedRange(req))
		})
	}
}

func TestContinues(t *testing.T) {
	full := Representation{length: 100, complete: 100, validator: `"v1"`, byETag: true, full: true}
	byDate := Representation{length: 100, complete: 100, validator: lastModified, full: true}
	part := Representation{start: 1000, length: 100, complete: 5000, validator: `"v1"`, byETag: true}
	tests := []struct {
		name   string
		rep    Representation
		off    int64
		fields map[string]string
		length int64
		want   resume.Reason
	}{
		{"the rest", full, 40, map[string]string{"Content-Range": "bytes 40-99/100"}, 60, ""},
		{"the rest, no Content-Length", full, 40, map[string]string{"Content-Range": "bytes 40-99/100"}, -1, ""},
		{"the rest of the caller's range", part, 40, map[string]string{"Content-Range": "bytes 1040-1099/5000"}, 60, ""},
		{"by Last-Modified", byDate, 40, map[string]string{"Etag": "", "Last-Modified": lastModified, "Content-Range": "bytes 40-99/100"}, 60, ""},
		{"another ETag", full, 40, map[string]string{"Etag": `"v2"`, "Content-Range": "bytes 40-99/100"}, 60, resume.Changed},
		{"the ETag made weak", full, 40, map[string]string{"Etag": `W/"v1"`, "Content-Range": "bytes 40-99/100"}, 60, resume.Changed},
		{"no ETag", full, 40, map[string]string{"Etag": "", "Content-Range": "bytes 40-99/100"}, 60, resume.Changed},
		{"another Last-Modified", byDate, 40, map[string]string{"Etag": "", "Last-Modified": aSecondLater, "Content-Range": "bytes 40-99/100"}, 60, resume.Changed},
		{"another complete length", full, 40, map[string]string{"Content-Range": "bytes 40-99/101"}, 60, resume.Changed},
		{"another coding", full, 40, map[string]string{"Content-Encoding": "gzip", "Content-Range": "bytes 40-99/100"}, 60, resume.Changed},
		{"from elsewhere", full, 40, map[string]string{"Content-Range": "bytes 0-99/100"}, 100, resume.Misaligned},
		{"short of the end", full, 40, map[string]string{"Content-Range": "bytes 40-89/100"}, 50, resume.Misaligned},
		{"a length that disagrees", full, 40, map[string]string{"Content-Range": "bytes 40-99/100"}, 61, resume.Misaligned},
		{"no Content-Range", full, 40, nil, 60, resume.Misaligned},
		{"several ranges", full, 40, map[string]string{"Content-Range": "bytes 40-99/100", "Content-Type": "multipart/byteranges; boundary=b"}, 60, resume.Misaligned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp := testkit.Resumable(206, tt.fields)
			resp.ContentLength = tt.length
			assert.Equal(t, tt.want, tt.rep.Continues(resp, tt.off))
		})
	}
	// Fields given twice: the stale validator first, the current one
	// second, or two ranges.
	twice := []struct {
		name   string
		rep    Representation
		key    string
		values []string
		want   resume.Reason
	}{
		{"two ETag fields", full, "Etag", []string{`"v0"`, `"v1"`}, resume.Changed},
		{"the same ETag twice", full, "Etag", []string{`"v1"`, `"v1"`}, resume.Changed},
		{"two Last-Modified fields", byDate, "Last-Modified", []string{aSecondLater, lastModified}, resume.Changed},
		{"two Content-Range fields", full, "Content-Range", []string{"bytes 0-99/100", "bytes 40-99/100"}, resume.Misaligned},
		{"two Content-Encoding fields", full, "Content-Encoding", []string{"", "gzip"}, resume.Changed},
	}
	for _, tt := range twice {
		t.Run(tt.name, func(t *testing.T) {
			_, resp := testkit.Resumable(206, map[string]string{"Content-Range": "bytes 40-99/100"})
			if !tt.rep.byETag {
				delete(resp.Header, "Etag")
				resp.Header.Set("Last-Modified", lastModified)
			}
			resp.ContentLength = 60
			resp.Header[tt.key] = tt.values
			assert.Equal(t, tt.want, tt.rep.Continues(resp, 40))
		})
	}
}

func TestRangeHeader(t *testing.T) {
	caller := http.Header{"Authorization": {"Bearer t"}, "Range": {"bytes=1000-1099"}}
	full := Representation{length: 100, complete: 100, validator: `"v1"`, byETag: true, full: true}
	h := full.RangeHeader(caller, 40)
	assert.Equal(t, http.Header{"Authorization": {"Bearer t"}, "Range": {"bytes=40-"}, "If-Range": {`"v1"`}, "Accept-Encoding": {"identity"}}, h)
	assert.Equal(t, "bytes=1000-1099", caller.Get("Range"), "the caller's header is not modified")

	part := Representation{start: 1000, length: 100, complete: 5000, validator: lastModified}
	h = part.RangeHeader(http.Header{"Accept-Encoding": {"gzip"}}, 40)
	assert.Equal(t, http.Header{"Range": {"bytes=1040-1099"}, "If-Range": {lastModified}, "Accept-Encoding": {"gzip"}}, h)
	assert.Equal(t, "bytes=40-", full.RangeHeader(nil, 40).Get("Range"))

	// Keys the caller wrote in another case are replaced, not doubled:
	// net/http would send both as values of one field.
	odd := http.Header{"range": {"bytes=1000-"}, "if-range": {`"v0"`}, "accept-encoding": {"gzip"}}
	h = full.RangeHeader(odd, 40)
	assert.Equal(t, http.Header{"Range": {"bytes=40-"}, "If-Range": {`"v1"`}, "accept-encoding": {"gzip"}}, h)
	assert.Equal(t, http.Header{"range": {"bytes=1000-"}, "if-range": {`"v0"`}, "accept-encoding": {"gzip"}}, odd, "the caller's header is not modified")
}

// entityTagTests are the ETag values entityTag reads, hostile ones
// included, and seed FuzzEntityTag.
var entityTagTests = []struct {
	in   string
	want tagKind
}{
	{``, tagNone},
	{`""`, tagNone},
	{`"v1"`, tagStrong},
	{`"0x8DC5A3F1B2C4D5E"`, tagStrong},
	{`"d41d8cd98f00b204e9800998ecf8427e-3"`, tagStrong},
	{`"été"`, tagStrong},
	{"\"\x80\xff\"", tagStrong}, // obs-text
	{`W/"v1"`, tagWeak},
	{`W/""`, tagWeak},
	{`w/"v1"`, tagMalformed}, // W is case-sensitive
	{`v1`, tagMalformed},
	{`"v1`, tagMalformed},
	{`v1"`, tagMalformed},
	{`"`, tagMalformed},
	{`"v1", "v2"`, tagMalformed}, // two tags folded into one field
	{`"v 1"`, tagMalformed},
	{"\"v\t1\"", tagMalformed},
	{"\"v\x7f\"", tagMalformed},
	{`"v"1"`, tagMalformed},
	{`W/`, tagMalformed},
	{`W/v1`, tagMalformed},
	{` "v1"`, tagMalformed},
}

func TestEntityTag(t *testing.T) {
	for _, tt := range entityTagTests {
		assert.Equal(t, tt.want, entityTag(tt.in), "%q", tt.in)
	}
}

func FuzzEntityTag(f *testing.F) {
	for _, tt := range entityTagTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		kind := entityTag(in)
		opaque, weak := strings.CutPrefix(in, "W/")
		switch kind {
		case tagNone:
			if in != "" && in != `""` {
				t.Fatalf("%q: no validator", in)
			}
		case tagStrong, tagWeak:
			if weak != (kind == tagWeak) || len(opaque) < 2 || opaque[0] != '"' || opaque[len(opaque)-1] != '"' ||
				strings.ContainsAny(opaque[1:len(opaque)-1], "\" \t\r\n\x00\x7f") || kind == tagStrong && len(opaque) == 2 {
				t.Fatalf("%q: accepted as %d", in, kind)
			}
			if kind == tagStrong && entityTag("W/"+in) != tagWeak {
				t.Fatalf("%q: strong, but W/ before it is not weak", in)
			}
		}
	})
}

// acceptRangesTests are the Accept-Ranges fields acceptsRanges reads, and
// seed FuzzAcceptsRanges.
var acceptRangesTests = []struct {
	values []string
	want   bool
}{
	{nil, false},
	{[]string{"bytes"}, true},
	{[]string{"none"}, false},
	{[]string{"none, Bytes"}, true},
	{[]string{" bytes\t"}, true},
	{[]string{"none", "bytes"}, true},
	{[]string{"bytes=0-"}, false},
	{[]string{"bytesx"}, false},
	{[]string{"by tes"}, false},
	{[]string{",,,"}, false},
	{[]string{""}, false},
}

func TestAcceptsRanges(t *testing.T) {
	for _, tt := range acceptRangesTests {
		assert.Equal(t, tt.want, AcceptsRanges(tt.values), "%q", tt.values)
	}
}

func FuzzAcceptsRanges(f *testing.F) {
	for _, tt := range acceptRangesTests {
		f.Add(strings.Join(tt.values, "\n"))
	}
	f.Fuzz(func(t *testing.T, in string) {
		values := strings.Split(in, "\n")
		want := false
		for _, v := range values {
			for _, item := range strings.Split(v, ",") {
				want = want || strings.EqualFold(strings.Trim(item, " \t"), "bytes")
			}
		}
		if got := AcceptsRanges(values); got != want {
			t.Fatalf("%q: got %v, want %v", values, got, want)
		}
	})
}

// FuzzDescribe reads a response's header fields as a server may send
// them, and checks that a Representation found resumable has a length, a
// validator and offsets that fit an int64, and that every request for its
// rest names one range within it.
func FuzzDescribe(f *testing.F) {
	f.Add(true, int64(100), "", `"v1"`, "", "", "", int64(40))
	f.Add(false, int64(-1), "bytes 0-9223372036854775807/*", `"v1"`, "", "", "", int64(0))
	f.Add(false, int64(-1), "bytes 0-9223372036854775806/*", `"v1"`, "", "", "", int64(9223372036854775806))
	f.Add(false, int64(100), "bytes 1000-1099/5000", `"v1"`, `"v2"`, "", "", int64(99))
	f.Add(true, int64(9223372036854775807), "", "", "", lastModified, aSecondLater, int64(1))
	f.Add(true, int64(10), "", `""`, "", lastModified, aSecondLater, int64(5))
	for _, tt := range contentRangeTests {
		f.Add(false, int64(-1), tt.in, `"v1"`, "", "", "", int64(1))
	}
	for _, tt := range entityTagTests {
		f.Add(true, int64(10), "", tt.in, "", "", "", int64(1))
	}
	f.Fuzz(func(t *testing.T, ok200 bool, length int64, contentRange, etag, etag2, lm, date string, off int64) {
		status := http.StatusPartialContent
		if ok200 {
			status = http.StatusOK
		}
		req, resp := testkit.Resumable(status, map[string]string{"Etag": etag, "Content-Range": contentRange, "Last-Modified": lm, "Date": date})
		if etag2 != "" {
			resp.Header["Etag"] = append(resp.Header["Etag"], etag2)
		}
		resp.ContentLength = length
		rep, why := Describe(req, resp)
		if why != "" {
			return
		}
		if rep.length <= 0 || rep.start < 0 || rep.start > math.MaxInt64-rep.length || rep.validator == "" ||
			(rep.complete != -1 && rep.complete < rep.start+rep.length) {
			t.Fatalf("accepted %+v", rep)
		}
		if len(resp.Header["Etag"]) > 1 && rep.byETag {
			t.Fatalf("resumed by one of two ETags: %+v", rep)
		}
		if off < 0 || off >= rep.length {
			off = rep.length - 1
		}
		h := rep.RangeHeader(http.Header{"range": {"bytes=0-"}}, off)
		if len(h) != 3 || len(h["Range"]) != 1 || len(h["If-Range"]) != 1 {
			t.Fatalf("request for the rest from %d of %+v: %q", off, rep, h)
		}
		spec := strings.TrimPrefix(h["Range"][0], "bytes=")
		first, last, _ := strings.Cut(spec, "-")
		if n, err := strconv.ParseInt(first, 10, 64); err != nil || n != rep.start+off {
			t.Fatalf("Range %q from %d of %+v", spec, off, rep)
		}
		if n, err := strconv.ParseInt(last, 10, 64); last != "" && (err != nil || n != rep.start+rep.length-1) {
			t.Fatalf("Range %q from %d of %+v", spec, off, rep)
		}
	})
}
