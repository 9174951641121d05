// Package backoff computes how long a client waits before each retry.
//
// A schedule (Constant, Linear, Exponential, ExponentialBy, Fibonacci,
// Polynomial) sets the delay for each retry and caps it. A jitter
// (FullJitter, EqualJitter, ProportionalJitter) spreads the retries of many
// clients over time, so that they do not arrive at a recovering server all
// at once. DecorrelatedJitter is both at once. Most callers want Default,
// which is what a retryhttp Transport uses unless told otherwise:
//
//	retryhttp.New(retryhttp.WithBackoff(backoff.FullJitter(backoff.Exponential(100*time.Millisecond, 5*time.Second))))
package backoff

import (
	"math"
	"time"
)

// A Func computes the delay before retry number n (1 for the first retry,
// 2 for the second, ...). prev is the delay chosen before the previous retry
// (0 before the first) and r is a random number uniform in [0, 1). A Func is
// a pure function: it keeps no state and is safe for concurrent use.
//
// The schedules are deterministic: they ignore prev and r. They treat n < 1
// as 1, and they never overflow: a delay that would exceed the cap, however
// large n is, is the cap.
type Func func(n int, prev time.Duration, r float64) time.Duration

// Default returns the Func a Transport uses before retrying an
// ordinary failure: FullJitter(Exponential(50*time.Millisecond,
// 20*time.Second)). The delay before retry n is uniform in
// [0, min(50ms·2ⁿ⁻¹, 20s)).
func Default() Func {
	return FullJitter(Exponential(50*time.Millisecond, 20*time.Second))
}

// DefaultThrottle returns the Func a Transport uses before retrying
// an attempt the server throttled (429, or 503 with Retry-After):
// FullJitter(Exponential(1*time.Second, 20*time.Second)). Its longer base
// gives an overloaded server time to recover. A Retry-After header still sets
// the least delay.
func DefaultThrottle() Func {
	return FullJitter(Exponential(1*time.Second, 20*time.Second))
}

// Constant returns a Func that waits d before every retry.
// It panics if d is negative.
func Constant(d time.Duration) Func {
	if d < 0 {
		panic("backoff: Constant: delay must not be negative")
	}
	return func(int, time.Duration, float64) time.Duration { return d }
}

// Linear returns a Func that waits base·n before retry n, and at most max.
// It panics if base is negative or max is less than base.
func Linear(base, max time.Duration) Func {
	checkSchedule("Linear", base, max)
	return func(n int, _ time.Duration, _ float64) time.Duration {
		n = atLeastOne(n)
		if base == 0 {
			return 0
		}
		if int64(n) > int64(max/base) { // base·n > max, or would overflow
			return max
		}
		return base * time.Duration(n)
	}
}

// Exponential returns a Func that waits base·2ⁿ⁻¹ before retry n (base,
// 2·base, 4·base, ...), and at most max.
// It panics if base is negative or max is less than base.
func Exponential(base, max time.Duration) Func {
	checkSchedule("Exponential", base, max)
	return func(n int, _ time.Duration, _ float64) time.Duration {
		n = atLeastOne(n)
		if base == 0 {
			return 0
		}
		// base<<shift ≤ max exactly when base ≤ max>>shift. From shift 63 on
		// max>>shift is 0, below any base, so the cap applies.
		shift := uint(min(n-1, 63))
		if base > max>>shift {
			return max
		}
		return base << shift
	}
}

// ExponentialBy returns a Func that waits base·multiplierⁿ⁻¹ before retry
// n, and at most max. For example, ExponentialBy(3*time.Second, 1.5,
// time.Minute) waits 3 s, 4.5 s, 6.75 s, ... A multiplier of 1 makes it
// constant. For a multiplier of 2 prefer Exponential, which computes in
// integers and so is exact for every base; ExponentialBy computes in floating
// point and rounds to the nearest nanosecond.
// It panics if base is negative, max is less than base, or multiplier is NaN,
// infinite or less than 1.
func ExponentialBy(base time.Duration, multiplier float64, max time.Duration) Func {
	checkSchedule("ExponentialBy", base, max)
	if math.IsNaN(multiplier) || math.IsInf(multiplier, 0) || multiplier < 1 {
		panic("backoff: ExponentialBy: multiplier must be finite and at least 1")
	}
	return func(n int, _ time.Duration, _ float64) time.Duration {
		n = atLeastOne(n)
		return scale(base, math.Pow(multiplier, float64(n-1)), max)
	}
}

// Fibonacci returns a Func that waits base·fib(n) before retry n, where
// fib runs 1, 1, 2, 3, 5, 8, ...: base, base, 2·base, 3·base, 5·base, ...,
// and at most max. It grows more gently than Exponential, by a factor of
// about 1.618 per retry.
// It panics if base is negative or max is less than base.
func Fibonacci(base, max time.Duration) Func {
	checkSchedule("Fibonacci", base, max)
	return func(n int, _ time.Duration, _ float64) time.Duration {
		n = atLeastOne(n)
		if base == 0 {
			return 0
		}
		// fib(92) is the largest Fibonacci number that fits in an int64, so
		// from n = 93 on base·fib(n) exceeds every max.
		if n > 92 {
			return max
		}
		// base·f ≤ max exactly when f ≤ limit. fib(93) still fits in a
		// uint64, so b never overflows.
		limit := uint64(max / base)
		a, b := uint64(1), uint64(1) // fib(i), fib(i+1)
		for i := 1; i < n; i++ {
			if a > limit {
				return max
			}
			a, b = b, a+b
		}
		if a > limit {
			return max
		}
		return base * time.Duration(a)
	}
}

// Polynomial returns a Func that waits base·n^degree before retry n, and
// at most max: a degree of 1 makes it Linear, 2 quadratic, 0 constant.
// Delays are rounded to the nearest nanosecond.
// It panics if base is negative, max is less than base, or degree is NaN,
// infinite or negative.
func Polynomial(base time.Duration, degree float64, max time.Duration) Func {
	checkSchedule("Polynomial", base, max)
	if math.IsNaN(degree) || math.IsInf(degree, 0) || degree < 0 {
		panic("backoff: Polynomial: degree must be finite and not negative")
	}
	return func(n int, _ time.Duration, _ float64) time.Duration {
		n = atLeastOne(n)
		return scale(base, math.Pow(float64(n), degree), max)
	}
}

// FullJitter returns a Func that waits a uniformly random delay in [0, d),
// where d is the delay b chooses (0 when d is 0). Of the jitters it spreads
// retries the most, and so does the most to keep many clients from retrying
// in step; its mean is d/2.
// It panics if b is nil.
func FullJitter(b Func) Func {
	if b == nil {
		panic("backoff: FullJitter: nil Func")
	}
	return func(n int, prev time.Duration, r float64) time.Duration {
		r = clampRand(r)
		return below(b(n, prev, r), r)
	}
}

// EqualJitter returns a Func that waits half the delay d that b chooses,
// plus a uniformly random delay in [0, d/2): a delay in [d/2, d). It
// guarantees some wait while still spreading retries.
// It panics if b is nil.
func EqualJitter(b Func) Func {
	if b == nil {
		panic("backoff: EqualJitter: nil Func")
	}
	return func(n int, prev time.Duration, r float64) time.Duration {
		r = clampRand(r)
		d := b(n, prev, r)
		if d <= 0 {
			return 0
		}
		half := d / 2
		return half + below(d-half, r)
	}
}

// ProportionalJitter returns a Func that waits a uniformly random delay in
// [d·(1-fraction), d·(1+fraction)), where d is the delay b chooses: with a
// fraction of 0.2, within 20% of d either way. Since the jitter is applied
// after b caps d, the delay may exceed b's cap by up to that fraction; it
// never exceeds the largest Duration.
// It panics if b is nil or fraction is not in [0, 1].
func ProportionalJitter(b Func, fraction float64) Func {
	if b == nil {
		panic("backoff: ProportionalJitter: nil Func")
	}
	if !(fraction >= 0 && fraction <= 1) { // also catches NaN
		panic("backoff: ProportionalJitter: fraction must be in [0, 1]")
	}
	return func(n int, prev time.Duration, r float64) time.Duration {
		r = clampRand(r)
		d := b(n, prev, r)
		if d <= 0 {
			return 0
		}
		// The factor is in [1-fraction, 1+fraction), so at least 0.
		x := float64(d) * (1 + fraction*(2*r-1))
		if x >= maxDurationFloat {
			return math.MaxInt64
		}
		return time.Duration(x)
	}
}

// DecorrelatedJitter returns a Func that waits a uniformly random delay
// between base and three times the previous delay (prev), and at most max. A
// prev below base, as before the first retry, counts as base, so the first
// delay is in [base, 3·base). Each delay thus depends on the one before
// rather than on the retry number, which spreads clients apart as they
// retry. It keeps no state: the caller passes the previous delay as prev.
// It panics if base is not positive or max is less than base.
func DecorrelatedJitter(base, max time.Duration) Func {
	if base <= 0 {
		panic("backoff: DecorrelatedJitter: base must be positive")
	}
	if max < base {
		panic("backoff: DecorrelatedJitter: max must not be less than base")
	}
	return func(_ int, prev time.Duration, r float64) time.Duration {
		r = clampRand(r)
		if prev < base {
			prev = base
		}
		hi := time.Duration(math.MaxInt64)
		if prev <= math.MaxInt64/3 {
			hi = 3 * prev
		}
		return min(base+below(hi-base, r), max)
	}
}

// maxDurationFloat is 2⁶³, the float64 nearest to the largest Duration, and
// the least float64 that does not convert to a Duration.
const maxDurationFloat = float64(1 << 63)

// checkSchedule panics, naming the constructor fn, when base or max is
// invalid for a schedule.
func checkSchedule(fn string, base, max time.Duration) {
	if base < 0 {
		panic("backoff: " + fn + ": base must not be negative")
	}
	if max < base {
		panic("backoff: " + fn + ": max must not be less than base")
	}
}

func atLeastOne(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// scale returns base·factor rounded to the nearest nanosecond, and at most
// max. factor must be at least 1 or +Inf.
func scale(base time.Duration, factor float64, max time.Duration) time.Duration {
	if base == 0 {
		return 0
	}
	x := float64(base) * factor
	if !(x < maxDurationFloat) {
		return max
	}
	return min(time.Duration(math.Round(x)), max)
}

// clampRand brings r into [0, 1), mapping NaN to 0.
func clampRand(r float64) float64 {
	switch {
	case !(r >= 0): // negative or NaN
		return 0
	case r >= 1:
		return math.Nextafter(1, 0)
	}
	return r
}

// below returns r·d for r in [0, 1), which is in [0, d) for positive d and 0
// otherwise.
func below(d time.Duration, r float64) time.Duration {
	if d <= 0 {
		return 0
	}
	// r·float64(d) is below 2⁶³, so it converts; rounding d to float64 can
	// still carry the product up to d itself.
	return min(time.Duration(r*float64(d)), d-1)
}
