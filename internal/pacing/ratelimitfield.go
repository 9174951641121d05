package pacing

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// fieldValues returns the values of the field key, canonical, of h, and
// reports false when there are none or they are too long together to be
// read (more than maxFieldLen bytes).
func fieldValues(h http.Header, key string) ([]string, bool) {
	vs := h[key]
	if len(vs) == 0 {
		return nil, false
	}
	n := 0
	for _, v := range vs {
		if n += len(v); n > maxFieldLen {
			return nil, false
		}
	}
	return vs, true
}

// eachMember calls f with each member of the field whose lines are vs,
// parsed by parse, and reports whether every line is valid. The lines of a
// field are one list (RFC 9110 joins them with commas).
func eachMember(vs []string, parse func(string, func(sfMember) bool) bool, f func(sfMember)) bool {
	for _, v := range vs {
		if !parse(v, func(m sfMember) bool { f(m); return true }) {
			return false
		}
	}
	return true
}

// validLines reports whether every line of vs is valid for parse.
func validLines(vs []string, parse func(string, func(sfMember) bool) bool) bool {
	return eachMember(vs, parse, func(sfMember) {})
}

// readRateLimitFields reads the fields of the IETF draft
// (draft-ietf-httpapi-ratelimit-headers-11): RateLimit, a list of
// quota policies' names, each with what remains of it (r) and the seconds
// until it resets (t), as in `"default";r=50;t=30`, and RateLimit-Policy,
// a list of the policies, each with its quota (q) and window in seconds
// (w), as in `"default";q=100;w=60`. Of several members the most
// restrictive counts, with the policy of the same name, or else the
// tightest. A field that is not a valid list is ignored entirely, as the
// draft requires, and so is a member without a non-negative integer r (q).
// It also reads the older drafts' forms when RateLimit is not a list: the
// dictionary `limit=100, remaining=50, reset=30`, and the fields
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds).
func readRateLimitFields(h http.Header, _ time.Time) (quota, bool) {
	best, name, found := noQuota, "", false
	if vs, ok := fieldValues(h, "Ratelimit"); ok {
		if validLines(vs, parseSFList) {
			eachMember(vs, parseSFList, func(m sfMember) {
				if m.params.has&hasR == 0 || m.params.r < 0 {
					return
				}
				q := quota{Remaining: m.params.r}
				if m.params.has&hasT != 0 && m.params.t >= 0 {
					q.Reset = wire.Units(m.params.t, time.Second)
				}
				if !found || tighter(q, best) {
					best, name, found = q, m.name, true
				}
			})
		} else if q, ok := readRateLimitDict(vs); ok {
			best, found = q, true
		}
	}
	if vs, ok := fieldValues(h, "Ratelimit-Policy"); ok && validLines(vs, parseSFList) {
		var paired, tightest quota
		var isPaired, hasPolicy bool
		eachMember(vs, parseSFList, func(m sfMember) {
			if m.params.has&hasQ == 0 || m.params.q < 0 {
				return
			}
			p := quota{Remaining: -1, Limit: m.params.q}
			if m.params.has&hasW != 0 && m.params.w > 0 {
				p.Window = wire.Units(m.params.w, time.Second)
			}
			if found && !isPaired && name != "" && name != `\` && m.name == name {
				paired, isPaired = p, true
			}
			if !hasPolicy || tighter(p, tightest) {
				tightest, hasPolicy = p, true
			}
		})
		if !isPaired {
			paired = tightest
		}
		best.Limit, best.Window = paired.Limit, paired.Window
		found = found || best.known()
	}
	if !found {
		return readRateLimitOld(h)
	}
	return best, found
}

// readRateLimitDict reads the dictionary form of RateLimit of the older
// drafts: `limit=100, remaining=50, reset=30`.
func readRateLimitDict(vs []string) (quota, bool) {
	q := noQuota
	valid := eachMember(vs, parseSFDict, func(m sfMember) {
		if !m.isNum || m.num < 0 {
			return
		}
		switch m.key {
		case "limit":
			q.Limit = m.num
		case "remaining":
			q.Remaining = m.num
		case "reset":
			q.Reset = wire.Units(m.num, time.Second)
		}
	})
	return q, valid && q.Remaining >= 0
}

// readRateLimitOld reads the fields of the older drafts: RateLimit-Remaining,
// RateLimit-Reset (seconds) and RateLimit-Limit, a number, possibly
// followed by policies ("100, 100;w=60"), of which the tightest counts.
func readRateLimitOld(h http.Header) (quota, bool) {
	q := quota{Remaining: count(h, "Ratelimit-Remaining")}
	if q.Remaining < 0 {
		return noQuota, false
	}
	if n := count(h, "Ratelimit-Reset"); n > 0 {
		q.Reset = wire.Units(n, time.Second)
	}
	if vs, ok := fieldValues(h, "Ratelimit-Limit"); ok && validLines(vs, parseSFList) {
		first := true
		eachMember(vs, parseSFList, func(m sfMember) {
			if !m.isNum || m.num < 0 {
				return
			}
			p := quota{Remaining: -1, Limit: m.num}
			if m.params.has&hasW != 0 && m.params.w > 0 {
				p.Window = wire.Units(m.params.w, time.Second)
			}
			if first || tighter(p, quota{Remaining: -1, Limit: q.Limit, Window: q.Window}) {
				q.Limit, q.Window = p.Limit, p.Window
			}
			first = false
		})
	}
	return q, true
}
