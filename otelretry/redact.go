package otelretry

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Redacted is the value that replaces a credential in a URL on a span, as
// the semantic conventions for url.full ask.
const Redacted = "REDACTED"

// DefaultSensitiveQueryParameters returns the query parameters whose values
// otelretry redacts by default: those the HTTP semantic conventions (v1.43)
// list for url.full (X-Amz-Signature, X-Amz-Credential,
// X-Amz-Security-Token, sig, X-Goog-Signature) and those their earlier
// versions listed (AWSAccessKeyId, Signature, AWS's signature version 2).
// The slice is the caller's to change.
func DefaultSensitiveQueryParameters() []string {
	return []string{
		"AWSAccessKeyId", "Signature", "sig", "X-Goog-Signature",
		"X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token",
	}
}

// WithSensitiveQueryParameters sets the query parameters whose values are
// replaced by REDACTED wherever otelretry's spans would show the URL, in
// place of DefaultSensitiveQueryParameters: as the semantic conventions
// describe it, the list replaces the default, it does not add to it. Keys
// are matched as they are written, case included, after percent-decoding.
// To add a key to the default:
//
//	otelretry.WithSensitiveQueryParameters(append(otelretry.DefaultSensitiveQueryParameters(), "token")...)
//
// With no keys, no query value is redacted; a URL's user information
// always is.
func WithSensitiveQueryParameters(keys ...string) Option {
	keys = append([]string{}, keys...) // not nil: nil is the default
	return func(c *config) { c.sensitive = keys }
}

// redactor replaces credentials in the URLs of attempts.
type redactor struct {
	keys []string // query parameters whose values are redacted
}

// url returns u with the values of sensitive query parameters and its user
// information replaced by Redacted, and whether anything was replaced. It
// allocates only when something is.
func (rd redactor) url(u *url.URL) (*url.URL, bool) {
	query, redacted := rd.query(u.RawQuery)
	if !redacted && u.User == nil {
		return u, false
	}
	out := *u
	out.RawQuery = query
	if u.User != nil {
		out.User = url.UserPassword(Redacted, Redacted)
	}
	return &out, true
}

// query returns the raw query q with the values of sensitive parameters
// replaced by Redacted, and whether any was.
func (rd redactor) query(q string) (string, bool) {
	if !rd.any(q) {
		return q, false
	}
	var b strings.Builder
	b.Grow(len(q))
	for i, part := range strings.Split(q, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		if key, _, ok := strings.Cut(part, "="); ok && rd.sensitive(key) {
			b.WriteString(key)
			b.WriteString("=" + Redacted)
			continue
		}
		b.WriteString(part)
	}
	return b.String(), true
}

// any reports whether the raw query q has a sensitive parameter with a
// value to redact, without allocating.
func (rd redactor) any(q string) bool {
	if len(rd.keys) == 0 {
		return false
	}
	for q != "" {
		var part string
		part, q, _ = strings.Cut(q, "&")
		if key, value, ok := strings.Cut(part, "="); ok && value != Redacted && rd.sensitive(key) {
			return true
		}
	}
	return false
}

// sensitive reports whether the raw query key names a sensitive parameter.
func (rd redactor) sensitive(key string) bool {
	if strings.ContainsAny(key, "%+") {
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
	}
	return slices.Contains(rd.keys, key)
}

// redactedKey is the context key of the original of an attempt whose URL
// otelhttp is shown redacted.
type redactedKey struct{}

// original is the URL of an attempt as it is to be sent, and as url.full
// shows it.
type original struct {
	url  *url.URL
	full string
}

// redact returns r for otelhttp to observe: r itself when its URL carries
// no credential, or else a shallow copy with the URL redacted, whose context
// holds the original URL for the attempts layer to restore.
func (rd redactor) redact(r *http.Request) *http.Request {
	u, ok := rd.url(r.URL)
	if !ok {
		return r
	}
	shown := r.WithContext(context.WithValue(r.Context(), redactedKey{}, &original{url: r.URL, full: u.String()}))
	shown.URL = u
	return shown
}

// restore returns the attempt r with the URL it is to be sent to, and the
// url.full its span should show ("" when otelhttp's own is right). r is
// returned as it is unless redact replaced its URL.
func restore(r *http.Request) (*http.Request, string) {
	if r.URL.User == nil && !strings.Contains(r.URL.RawQuery, Redacted) {
		return r, "" // not redacted: no context lookup
	}
	o, ok := r.Context().Value(redactedKey{}).(*original)
	if !ok {
		return r, ""
	}
	sent := r.WithContext(r.Context())
	sent.URL = o.url
	if o.url.User == nil {
		// otelhttp's url.full, which drops user information, is the
		// redacted URL already.
		return sent, ""
	}
	return sent, o.full
}
