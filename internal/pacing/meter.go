package pacing

import "math"

// meterTau is the time constant of a meter, in nanoseconds: the rates it
// measures weigh the last second most.
const meterTau = 1e9

// A meter measures the rate of events, weighted exponentially over the
// last meterTau. Times are nanoseconds from any origin.
type meter struct {
	sum         float64 // events after the first, each 1/meterTau, decayed to last
	first, last int64
	n           uint32 // events, saturating
}

// add counts an event at t. An event earlier than the latest counts at the
// latest's time.
func (m *meter) add(t int64) {
	if m.n == 0 {
		m.first, m.last, m.n = t, t, 1
		return
	}
	if t > m.last {
		m.sum *= math.Exp(-float64(t-m.last) / meterTau)
		m.last = t
	}
	m.sum += 1 / meterTau
	if m.n < math.MaxUint32 {
		m.n++
	}
}

// rate returns the rate of events as of the latest, in events a second,
// and reports false before two events. Early on, when the events span less
// than meterTau, the weights are scaled to the span they cover.
func (m *meter) rate() (float64, bool) {
	if m.n < 2 || m.last <= m.first {
		return 0, false
	}
	// The first event only marks the start: the sum holds the n-1 after
	// it, and the weights of a steady rate over the span add up to
	// 1-exp(-span/tau) of it.
	return m.sum / -math.Expm1(-float64(m.last-m.first)/meterTau) * 1e9, true
}
