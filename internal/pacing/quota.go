package pacing

import (
	"net/http"
	"strings"
	"time"
)

// A quota is what a response says of the quota of its key, in one of the
// forms readQuota knows: how many requests remain until when, and the
// quota itself when announced.
type quota struct {
	// Remaining is how many requests remain until Reset; -1 when not said.
	Remaining int64
	// Reset is how long until the quota is whole again: its window ends,
	// or its bucket is full again; 0 when not said, or now.
	Reset time.Duration
	// Limit is the quota: requests a Window (a bucket's capacity when
	// Window is 0); 0 when not said.
	Limit int64
	// Window is the time Limit is for; 0 when not said.
	Window time.Duration
	// Bucket reports a quota that refills continuously, a bucket of Limit
	// requests, with Reset the time until it is full again: the rate it
	// allows is its refill, (Limit-Remaining)/Reset. A quota that is not a
	// bucket allows what remains until Reset, and nothing more.
	Bucket bool
}

// noQuota is the quota of a response that says nothing of one.
var noQuota = quota{Remaining: -1}

// lowFraction is how close to spent a quota must come for its key to be
// paced: a tenth of it left, or nothing.
const lowFraction = 10

// low reports whether q says its quota is spent or close to it: nothing
// remains, or at most a tenth of an announced limit.
func (q quota) low() bool {
	return q.Remaining == 0 || q.Remaining > 0 && q.Limit > 0 && q.Remaining <= q.Limit/lowFraction
}

// spread returns the rate, in requests a second, that spends what remains
// evenly over what is left of the window, and reports false when q says
// neither.
func (q quota) spread() (float64, bool) {
	if q.Remaining < 0 || q.Reset <= 0 {
		return 0, false
	}
	return float64(q.Remaining) / q.Reset.Seconds(), true
}

// policy returns the announced quota as a rate, in requests a second, and
// reports false when q announces none.
func (q quota) policy() (float64, bool) {
	if q.Limit <= 0 || q.Window <= 0 {
		return 0, false
	}
	return float64(q.Limit) / q.Window.Seconds(), true
}

// known reports whether q says anything pacing uses.
func (q quota) known() bool {
	_, ok := q.policy()
	return q.Remaining >= 0 || ok
}

// tighter reports whether a restricts more than b: a spent quota more than
// any other, the one of the two that resets later first; then the lower
// spread; then the lower policy.
func tighter(a, b quota) bool {
	if as, bs := a.Remaining == 0, b.Remaining == 0; as != bs {
		return as
	} else if as {
		return a.Reset > b.Reset
	}
	ar, aok := a.spread()
	br, bok := b.spread()
	if aok != bok {
		return aok
	}
	if aok && ar != br {
		return ar < br
	}
	ap, aok := a.policy()
	bp, bok := b.policy()
	if aok != bok {
		return aok
	}
	return aok && ap < bp
}

// maxReset is the furthest reset believed: a day, the longest window of
// the quotas APIs announce. One further off (year 9999, a century of
// seconds) is a server's mistake, which would hold a key for good on what
// remains of it, however many requests the server accepts: it is read as
// a reset not said, and the key's rate is learned from its throttles.
const maxReset = 24 * time.Hour

// readQuota reads the quota a response's header h announces, at now by
// the client's clock, in any of the forms this package knows (the IETF
// RateLimit fields and their older drafts, GitHub's, OpenAI's, Anthropic's
// and Shopify's), and reports false when it announces none. When several
// forms are present, the one that restricts most counts. A reset beyond
// maxReset is not believed. Only the readers of the forms whose fields h
// has are asked.
func readQuota(h http.Header, now time.Time) (quota, bool) {
	forms := quotaForms(h)
	if forms == 0 {
		return noQuota, false
	}
	best, found := noQuota, false
	for i, read := range [...]func(http.Header, time.Time) (quota, bool){
		readXRateLimit, readOpenAI, readAnthropic, readShopify, readRateLimitFields,
	} {
		if forms&(1<<i) == 0 {
			continue
		}
		q, ok := read(h, now)
		if q.Reset > maxReset {
			q.Reset = 0 // said, but not believed
		}
		if ok && (!found || tighter(q, best)) {
			best, found = q, true
		}
	}
	return best, found
}

// The forms of quota fields, as quotaForms reports them, in the order of
// readQuota's readers.
const (
	formXRateLimit = 1 << iota // GitHub's
	formOpenAI
	formAnthropic
	formShopify
	formRateLimit // the IETF fields and their older drafts
)

// quotaForms reports which forms of quota h has fields of, by their
// names: one pass over its names, cheaper than looking each up.
func quotaForms(h http.Header) uint8 {
	var forms uint8
	for k := range h {
		switch {
		case len(k) < 9:
		case strings.HasPrefix(k, "X-Ratelimit-"):
			if strings.HasSuffix(k, "-Requests") {
				forms |= formOpenAI
			} else {
				forms |= formXRateLimit
			}
		case strings.HasPrefix(k, "Ratelimit"):
			forms |= formRateLimit
		case strings.HasPrefix(k, "Anthropic-Ratelimit-"):
			forms |= formAnthropic
		case k == "X-Shopify-Shop-Api-Call-Limit":
			forms |= formShopify
		}
	}
	return forms
}

// lowQuota reports whether h announces, in any of the forms readQuota
// reads, a quota spent or nearly spent (quota.low): what remains and the
// limit only, which no reset and no clock are needed for. When it is not,
// room is how many more requests the tightest quota it announces admits
// before it would be (0 when h announces none).
func lowQuota(h http.Header) (low bool, room int64) {
	forms := quotaForms(h)
	if forms == 0 {
		return false, 0
	}
	room = -1
	see := func(q quota) bool {
		if q.Remaining < 0 {
			return false
		}
		if q.low() {
			return true
		}
		if r := q.Remaining - q.Limit/lowFraction; room < 0 || r < room {
			room = r
		}
		return false
	}
	simple := func(remaining, limit string) quota {
		return quota{Remaining: count(h, remaining), Limit: max(count(h, limit), 0)}
	}
	var never time.Time // Shopify's and the IETF fields' readers read no clock
	for i, form := range [...]uint8{formXRateLimit, formOpenAI, formAnthropic, formShopify, formRateLimit} {
		if forms&form == 0 {
			continue
		}
		var q quota
		switch i {
		case 0:
			q = simple("X-Ratelimit-Remaining", "X-Ratelimit-Limit")
		case 1:
			q = simple("X-Ratelimit-Remaining-Requests", "X-Ratelimit-Limit-Requests")
		case 2:
			q = simple("Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Limit")
		case 3:
			q, _ = readShopify(h, never)
		default:
			q, _ = readRateLimitFields(h, never)
		}
		if see(q) {
			return true, 0
		}
	}
	return false, max(room, 0)
}
