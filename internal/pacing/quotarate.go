package pacing

import "time"

// The rate of a key whose server announces a quota is the rate the quota
// allows, the least of the forms below, and of the rate learned from its
// throttles, if any: a throttle still cuts.
//
//   - A bucket (OpenAI's, Anthropic's, Shopify's: Reset is when it is full
//     again) allows its refill: what it lacks over the time it takes to
//     refill it, each smoothed over the responses (refillWeight), a ratio
//     of means steady where the ratio of one response is not. The key is
//     sent slower than the refill while less than half the bucket is left
//     and faster while more is (levelGain), so that it stays about half
//     full, a margin against the jitter of arrivals. A bucket full, or
//     within a request of it, says nothing of its refill: the rate then
//     grows by refillCreep a second until a response finds it spent again,
//     given at once to the turns ahead as the growth after a cut is.
//   - A window (GitHub's, the IETF fields: Reset is when it ends) allows
//     what remains of it spread evenly over what is left of it, less what
//     was sent since the response (in flight, not yet counted), rather than
//     spent at once and then waited for. A window spent holds every turn
//     until it ends.
//   - An announced policy (RateLimit-Policy's q per w, Shopify's leak)
//     caps the rate, throttled or not.
//
// When the rate a quota allows drops by more than thinBelow below the
// fastest rate turns to come were given at, they are thinned to it, as by a
// cut.
const (
	refillWeight = 0.1
	levelGain    = 0.5
	refillCreep  = 0.5 // per second
	// refillFor is how long a bucket's refill holds without a response
	// that says it again.
	refillFor = 10 * time.Second
	thinBelow = 0.1
)

// lack returns what the bucket q describes lacks, in requests, and how long
// it takes to refill it, and reports false when q is not a bucket that
// lacks at least one request. Remaining counts whole requests: a bucket
// refilling holds half a request more on average, but one full a moment
// ago holds one request less exactly, which is why a bucket within a
// request of full says nothing of its refill.
func (q quota) lack() (float64, time.Duration, bool) {
	if !q.Bucket || q.Limit <= 0 || q.Remaining < 0 || q.Remaining >= q.Limit-1 || q.Reset <= 0 {
		return 0, 0, false
	}
	return float64(q.Limit-q.Remaining) - 0.5, q.Reset, true
}

// bucketRate returns the rate at which the key may be sent to the bucket q
// describes, from its refill and how full it is.
func (st *state) bucketRate(q quota) float64 {
	return clampRate(st.refill * (1 + levelGain*(float64(q.Remaining)/float64(q.Limit)-0.5)))
}

// learnQuota learns from quota q, read at n from the response to a request
// sent at sent.
func (st *state) learnQuota(q quota, n, sent int64) {
	defer st.quotaKnown(n, st.quotaOK && n < st.quotaUntil)
	if p, ok := q.policy(); ok {
		st.policy = p
	}
	old := st.rate(n)
	switch lack, in, ok := q.lack(); {
	case ok:
		if st.lackIn == 0 || st.creeping {
			st.lack, st.lackIn, st.creeping = lack, in.Seconds(), false
		} else {
			st.lack += refillWeight * (lack - st.lack)
			st.lackIn += refillWeight * (in.Seconds() - st.lackIn)
		}
		st.refill = st.lack / st.lackIn
		st.refillAt = n
		st.quota = st.bucketRate(q)
		st.quotaOK, st.quotaUntil = true, addSat(n, int64(refillFor))
	case q.Bucket && st.refill > 0 && q.Limit > 0 && q.Remaining >= q.Limit-1:
		st.refill = clampRate(st.refill * (1 + refillCreep*min(float64(n-st.refillAt)/1e9, 1)))
		st.creeping = true
		st.refillAt = n
		st.quota = st.bucketRate(q)
		st.quotaOK, st.quotaUntil = true, addSat(n, int64(refillFor))
	case !q.Bucket && q.Remaining == 0:
		st.quotaOK = false
		st.sched.move(n, addSat(n, int64(q.Reset)), 0, 0, false)
	case !q.Bucket && q.Remaining > 0 && q.Reset > 0:
		left := float64(q.Remaining)
		if m, ok := st.sent.rate(); ok && n > sent {
			left -= m * float64(n-sent) / 1e9
		}
		st.quota = clampRate(max(left, 0.5) / q.Reset.Seconds())
		st.quotaOK, st.quotaUntil = true, addSat(n, int64(q.Reset))
	}
	if now := st.rate(n); now < max(old, st.sched.fastest)*(1-thinBelow) {
		st.sched.move(n, n, now, 0, true)
	}
}

// quotaKnown notes at n that the key's quota, known before or not (had),
// may be known now.
func (st *state) quotaKnown(n int64, had bool) {
	if !had && (st.quotaOK && n < st.quotaUntil || st.fleetQuota > 0 && n < st.fleetQuotaUntil) {
		st.quotaSince = n
	}
}

// quotaExplains reports whether the quota, known at n, explains the
// throttle of a request sent at sent: the request was sent before the
// quota was known, with nothing to pace it by but what throttles taught.
func (st *state) quotaExplains(n, sent int64) bool {
	_, own := st.quotaRate(n)
	return sent < st.quotaSince && (own || st.fleetQuota > 0 && n < st.fleetQuotaUntil)
}

// quotaRate returns the rate the quota allows at n, and reports false when
// it allows any: a bucket's, grown by the creep since the last response
// when it was found full.
func (st *state) quotaRate(n int64) (float64, bool) {
	if !st.quotaOK || n >= st.quotaUntil {
		return 0, false
	}
	q := st.quota
	if st.creeping && n > st.refillAt {
		q *= 1 + refillCreep*min(float64(n-st.refillAt)/1e9, 1e3)
	}
	return q, true
}
