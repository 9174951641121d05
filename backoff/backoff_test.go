package backoff

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const maxDuration = time.Duration(math.MaxInt64)

func TestSchedules(t *testing.T) {
	const (
		ms = time.Millisecond
		s  = time.Second
	)
	tests := []struct {
		name string
		b    Func
		want []time.Duration // for n = 1..len(want)
		huge time.Duration   // for n = 1_000_000 and math.MaxInt
	}{
		{
			name: "Constant",
			b:    Constant(2 * s),
			want: []time.Duration{2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s},
			huge: 2 * s,
		},
		{
			name: "Constant zero",
			b:    Constant(0),
			want: []time.Duration{0, 0, 0},
			huge: 0,
		},
		{
			name: "Linear",
			b:    Linear(1*s, 7*s),
			want: []time.Duration{1 * s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s, 7 * s, 7 * s, 7 * s},
			huge: 7 * s,
		},
		{
			name: "Linear zero base",
			b:    Linear(0, s),
			want: []time.Duration{0, 0, 0},
			huge: 0,
		},
		{
			name: "Linear uncapped",
			b:    Linear(10*time.Hour, maxDuration),
			want: []time.Duration{10 * time.Hour, 20 * time.Hour, 30 * time.Hour, 40 * time.Hour, 50 * time.Hour,
				60 * time.Hour, 70 * time.Hour, 80 * time.Hour, 90 * time.Hour, 100 * time.Hour},
			huge: maxDuration, // base·n overflows
		},
		{
			name: "Exponential",
			b:    Exponential(100*ms, 10*s),
			want: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 10 * s, 10 * s, 10 * s},
			huge: 10 * s,
		},
		{
			name: "Exponential base equals max",
			b:    Exponential(3*s, 3*s),
			want: []time.Duration{3 * s, 3 * s, 3 * s},
			huge: 3 * s,
		},
		{
			name: "Exponential zero",
			b:    Exponential(0, 0),
			want: []time.Duration{0, 0, 0},
			huge: 0,
		},
		{
			name: "Exponential largest base",
			b:    Exponential(maxDuration, maxDuration),
			want: []time.Duration{maxDuration, maxDuration, maxDuration},
			huge: maxDuration,
		},
		{
			name: "ExponentialBy",
			b:    ExponentialBy(3*s, 1.5, time.Minute),
			want: []time.Duration{3 * s, 4500 * ms, 6750 * ms, 10125 * ms, 15187500 * time.Microsecond,
				22781250 * time.Microsecond, 34171875 * time.Microsecond, 51257812500, time.Minute, time.Minute},
			huge: time.Minute,
		},
		{
			name: "ExponentialBy 1 is constant",
			b:    ExponentialBy(5*s, 1, time.Minute),
			want: []time.Duration{5 * s, 5 * s, 5 * s},
			huge: 5 * s,
		},
		{
			name: "ExponentialBy 2",
			b:    ExponentialBy(100*ms, 2, 10*s),
			want: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 10 * s, 10 * s, 10 * s},
			huge: 10 * s,
		},
		{
			name: "ExponentialBy uncapped",
			b:    ExponentialBy(1, 10, maxDuration),
			want: []time.Duration{1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9},
			huge: maxDuration,
		},
		{
			name: "Fibonacci",
			b:    Fibonacci(1*s, 30*s),
			want: []time.Duration{1 * s, 1 * s, 2 * s, 3 * s, 5 * s, 8 * s, 13 * s, 21 * s, 30 * s, 30 * s},
			huge: 30 * s,
		},
		{
			name: "Fibonacci zero base",
			b:    Fibonacci(0, s),
			want: []time.Duration{0, 0, 0},
			huge: 0,
		},
		{
			name: "Polynomial square",
			b:    Polynomial(1*s, 2, 50*s),
			want: []time.Duration{1 * s, 4 * s, 9 * s, 16 * s, 25 * s, 36 * s, 49 * s, 50 * s, 50 * s, 50 * s},
			huge: 50 * s,
		},
		{
			name: "Polynomial cube",
			b:    Polynomial(10*ms, 3, 5*s),
			want: []time.Duration{10 * ms, 80 * ms, 270 * ms, 640 * ms, 1250 * ms, 2160 * ms, 3430 * ms, 5 * s, 5 * s, 5 * s},
			huge: 5 * s,
		},
		{
			name: "Polynomial degree 0 is constant",
			b:    Polynomial(2*s, 0, 5*s),
			want: []time.Duration{2 * s, 2 * s, 2 * s},
			huge: 2 * s,
		},
		{
			name: "Polynomial square root",
			b:    Polynomial(1*s, 0.5, 3*s),
			want: []time.Duration{1 * s, 1414213562, 1732050808, 2 * s, 2236067977, 2449489743, 2645751311, 2828427125, 3 * s, 3 * s},
			huge: 3 * s,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				n := i + 1
				got := tt.b(n, 0, 0.5)
				assert.Equal(t, want, got, "n = %d: got %v, want %v", n, got, want)
			}
			for _, n := range []int{1_000_000, math.MaxInt} {
				got := tt.b(n, 0, 0.5)
				assert.Equal(t, tt.huge, got, "n = %d: got %v, want %v", n, got, tt.huge)
			}
			for _, n := range []int{0, -1, math.MinInt} {
				got, want := tt.b(n, 0, 0.5), tt.want[0]
				assert.Equal(t, want, got, "n = %d is treated as 1: got %v, want %v", n, got, want)
			}
		})
	}
}

func TestSchedulesIgnorePrevAndRand(t *testing.T) {
	tests := []struct {
		name string
		b    Func
	}{
		{"Constant", Constant(time.Second)},
		{"Linear", Linear(time.Second, time.Minute)},
		{"Exponential", Exponential(time.Second, time.Minute)},
		{"ExponentialBy", ExponentialBy(time.Second, 1.5, time.Minute)},
		{"Fibonacci", Fibonacci(time.Second, time.Minute)},
		{"Polynomial", Polynomial(time.Second, 2, time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n := 1; n <= 10; n++ {
				want := tt.b(n, 0, 0)
				for _, prev := range []time.Duration{-time.Second, time.Hour, maxDuration} {
					for _, r := range []float64{0.3, 0.999, math.NaN(), 7} {
						got := tt.b(n, prev, r)
						assert.Equal(t, want, got, "n = %d, prev = %v, r = %v: got %v, want %v", n, prev, r, got, want)
					}
				}
			}
		})
	}
}

func TestFibonacciBoundary(t *testing.T) {
	// fib(92) is the largest Fibonacci number an int64 holds.
	b := Fibonacci(1, maxDuration)
	tests := []struct {
		n    int
		want time.Duration
	}{
		{90, 2880067194370816120},
		{91, 4660046610375530309},
		{92, 7540113804746346429},
		{93, maxDuration},
		{94, maxDuration},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.n), func(t *testing.T) {
			got := b(tt.n, 0, 0)
			assert.Equal(t, tt.want, got, "got %d, want %d", got, tt.want)
		})
	}
}

func TestLinearBoundary(t *testing.T) {
	b := Linear(1, maxDuration)
	tests := []struct {
		n    int
		want time.Duration
	}{
		{1, 1},
		{10, 10},
		{1_000_000, 1_000_000},
		{math.MaxInt32, math.MaxInt32},
		{math.MaxInt, math.MaxInt}, // the largest Duration on 64-bit platforms
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.n), func(t *testing.T) {
			got := b(tt.n, 0, 0)
			assert.Equal(t, tt.want, got, "got %d, want %d", got, tt.want)
		})
	}
}

func TestExponentialBoundary(t *testing.T) {
	b := Exponential(1, maxDuration)
	tests := []struct {
		n    int
		want time.Duration
	}{
		{62, 1 << 61},
		{63, 1 << 62},
		{64, maxDuration}, // 1<<63 does not fit
		{65, maxDuration},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.n), func(t *testing.T) {
			got := b(tt.n, 0, 0)
			assert.Equal(t, tt.want, got, "got %d, want %d", got, tt.want)
		})
	}
}

// invalidRands are values of r outside [0, 1), which jitters clamp into it.
var invalidRands = []float64{-1, -math.SmallestNonzeroFloat64, 1, 1.5, math.Inf(1), math.Inf(-1), math.NaN()}

func TestJitter(t *testing.T) {
	const s = time.Second
	justBelow := math.Nextafter(1, 0)
	tests := []struct {
		name string
		b    Func
		n    int
		prev time.Duration
		r    float64
		want time.Duration
	}{
		{"FullJitter r=0", FullJitter(Constant(10 * s)), 1, 0, 0, 0},
		{"FullJitter r=0.5", FullJitter(Constant(10 * s)), 1, 0, 0.5, 5 * s},
		{"FullJitter r=0.999999", FullJitter(Constant(10 * s)), 1, 0, 0.999999, 9999990 * time.Microsecond},
		{"FullJitter r just below 1", FullJitter(Constant(10 * s)), 1, 0, justBelow, 10*s - 1},
		{"FullJitter r=-1", FullJitter(Constant(10 * s)), 1, 0, -1, 0},
		{"FullJitter r=NaN", FullJitter(Constant(10 * s)), 1, 0, math.NaN(), 0},
		{"FullJitter r=1", FullJitter(Constant(10 * s)), 1, 0, 1, 10*s - 1},
		{"FullJitter r=+Inf", FullJitter(Constant(10 * s)), 1, 0, math.Inf(1), 10*s - 1},
		{"FullJitter of zero", FullJitter(Constant(0)), 1, 0, 0.5, 0},
		{"FullJitter of 1ns", FullJitter(Constant(1)), 1, 0, 0.999999, 0},
		{"FullJitter of largest", FullJitter(Constant(maxDuration)), 1, 0, 1, maxDuration - 1023},
		{"FullJitter Exponential", FullJitter(Exponential(s, time.Minute)), 3, 0, 0.5, 2 * s},

		{"EqualJitter r=0", EqualJitter(Constant(10 * s)), 1, 0, 0, 5 * s},
		{"EqualJitter r=0.5", EqualJitter(Constant(10 * s)), 1, 0, 0.5, 7500 * time.Millisecond},
		{"EqualJitter r=0.999999", EqualJitter(Constant(10 * s)), 1, 0, 0.999999, 9999995 * time.Microsecond},
		{"EqualJitter r=-1", EqualJitter(Constant(10 * s)), 1, 0, -1, 5 * s},
		{"EqualJitter r=NaN", EqualJitter(Constant(10 * s)), 1, 0, math.NaN(), 5 * s},
		{"EqualJitter r=1", EqualJitter(Constant(10 * s)), 1, 0, 1, 10*s - 1},
		{"EqualJitter odd", EqualJitter(Constant(3)), 1, 0, 0.999999, 2},
		{"EqualJitter of zero", EqualJitter(Constant(0)), 1, 0, 0.5, 0},

		{"ProportionalJitter r=0", ProportionalJitter(Constant(10*s), 0.2), 1, 0, 0, 8 * s},
		{"ProportionalJitter r=0.5", ProportionalJitter(Constant(10*s), 0.2), 1, 0, 0.5, 10 * s},
		{"ProportionalJitter r=0.999999", ProportionalJitter(Constant(10*s), 0.2), 1, 0, 0.999999, 11999996 * time.Microsecond},
		{"ProportionalJitter r=-1", ProportionalJitter(Constant(10*s), 0.2), 1, 0, -1, 8 * s},
		{"ProportionalJitter r=NaN", ProportionalJitter(Constant(10*s), 0.2), 1, 0, math.NaN(), 8 * s},
		{"ProportionalJitter r=1", ProportionalJitter(Constant(10*s), 0.2), 1, 0, 1, 12 * s},
		{"ProportionalJitter fraction 0", ProportionalJitter(Constant(10*s), 0), 1, 0, 0.999999, 10 * s},
		{"ProportionalJitter fraction 1", ProportionalJitter(Constant(10*s), 1), 1, 0, 0, 0},
		{"ProportionalJitter saturates", ProportionalJitter(Constant(maxDuration), 0.5), 1, 0, 0.999999, maxDuration},
		{"ProportionalJitter of zero", ProportionalJitter(Constant(0), 0.5), 1, 0, 0.5, 0},

		{"DecorrelatedJitter first r=0", DecorrelatedJitter(s, 10*s), 1, 0, 0, s},
		{"DecorrelatedJitter first r=0.5", DecorrelatedJitter(s, 10*s), 1, 0, 0.5, 2 * s},
		{"DecorrelatedJitter first r=0.999999", DecorrelatedJitter(s, 10*s), 1, 0, 0.999999, 2999998 * time.Microsecond},
		{"DecorrelatedJitter prev below base", DecorrelatedJitter(s, 10*s), 2, s / 2, 0.5, 2 * s},
		{"DecorrelatedJitter negative prev", DecorrelatedJitter(s, 10*s), 2, -s, 0.5, 2 * s},
		{"DecorrelatedJitter prev=2s", DecorrelatedJitter(s, 10*s), 2, 2 * s, 0.5, 3500 * time.Millisecond},
		{"DecorrelatedJitter capped", DecorrelatedJitter(s, 10*s), 5, 5 * s, 0.999999, 10 * s},
		{"DecorrelatedJitter huge prev", DecorrelatedJitter(s, 10*s), 5, maxDuration, 0.5, 10 * s},
		{"DecorrelatedJitter r=-1", DecorrelatedJitter(s, 10*s), 2, 2 * s, -1, s},
		{"DecorrelatedJitter r=NaN", DecorrelatedJitter(s, 10*s), 2, 2 * s, math.NaN(), s},
		{"DecorrelatedJitter r=1", DecorrelatedJitter(s, 10*s), 2, 2 * s, 1, 6*s - 1},
		{"DecorrelatedJitter ignores n", DecorrelatedJitter(s, 10*s), 1_000_000, 2 * s, 0.5, 3500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b(tt.n, tt.prev, tt.r)
			// Allow for rounding r·d to the nanosecond.
			assert.InDelta(t, float64(tt.want), float64(got), 1, "got %v, want %v", got, tt.want)
		})
	}
}

func TestJitterAppliedAfterCap(t *testing.T) {
	const s = time.Second
	capped := Exponential(1*s, 4*s) // 1s, 2s, 4s, 4s, ...
	tests := []struct {
		name string
		b    Func
		r    float64
		want time.Duration
	}{
		{"FullJitter", FullJitter(capped), 0.5, 2 * s},
		{"EqualJitter", EqualJitter(capped), 0.5, 3 * s},
		{"ProportionalJitter low", ProportionalJitter(capped, 0.5), 0, 2 * s},
		{"ProportionalJitter exceeds the cap by the fraction", ProportionalJitter(capped, 0.5), 1, 6 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b(10, 0, tt.r)
			assert.InDelta(t, float64(tt.want), float64(got), 1, "got %v, want %v", got, tt.want)
		})
	}
}

func TestJitterPassesArguments(t *testing.T) {
	type call struct {
		n    int
		prev time.Duration
		r    float64
	}
	var got call
	spy := Func(func(n int, prev time.Duration, r float64) time.Duration {
		got = call{n, prev, r}
		return time.Second
	})
	tests := []struct {
		name string
		b    Func
	}{
		{"FullJitter", FullJitter(spy)},
		{"EqualJitter", EqualJitter(spy)},
		{"ProportionalJitter", ProportionalJitter(spy, 0.1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.b(7, 3*time.Second, 0.25)
			assert.Equal(t, call{7, 3 * time.Second, 0.25}, got)
			tt.b(7, 3*time.Second, math.NaN())
			assert.Equal(t, call{7, 3 * time.Second, 0}, got, "r is clamped before it is passed on")
		})
	}
}

func TestBackoffPanics(t *testing.T) {
	const s = time.Second
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"Constant negative", func() { Constant(-1) }, "backoff: Constant: delay must not be negative"},

		{"Linear negative base", func() { Linear(-1, s) }, "backoff: Linear: base must not be negative"},
		{"Linear max below base", func() { Linear(2*s, s) }, "backoff: Linear: max must not be less than base"},
		{"Linear negative max", func() { Linear(0, -1) }, "backoff: Linear: max must not be less than base"},

		{"Exponential negative base", func() { Exponential(-1, s) }, "backoff: Exponential: base must not be negative"},
		{"Exponential max below base", func() { Exponential(2*s, s) }, "backoff: Exponential: max must not be less than base"},

		{"ExponentialBy negative base", func() { ExponentialBy(-1, 2, s) }, "backoff: ExponentialBy: base must not be negative"},
		{"ExponentialBy max below base", func() { ExponentialBy(2*s, 2, s) }, "backoff: ExponentialBy: max must not be less than base"},
		{"ExponentialBy multiplier below 1", func() { ExponentialBy(s, 0.5, 2*s) }, "backoff: ExponentialBy: multiplier must be finite and at least 1"},
		{"ExponentialBy negative multiplier", func() { ExponentialBy(s, -2, 2*s) }, "backoff: ExponentialBy: multiplier must be finite and at least 1"},
		{"ExponentialBy NaN multiplier", func() { ExponentialBy(s, nan, 2*s) }, "backoff: ExponentialBy: multiplier must be finite and at least 1"},
		{"ExponentialBy infinite multiplier", func() { ExponentialBy(s, inf, 2*s) }, "backoff: ExponentialBy: multiplier must be finite and at least 1"},

		{"Fibonacci negative base", func() { Fibonacci(-1, s) }, "backoff: Fibonacci: base must not be negative"},
		{"Fibonacci max below base", func() { Fibonacci(2*s, s) }, "backoff: Fibonacci: max must not be less than base"},

		{"Polynomial negative base", func() { Polynomial(-1, 2, s) }, "backoff: Polynomial: base must not be negative"},
		{"Polynomial max below base", func() { Polynomial(2*s, 2, s) }, "backoff: Polynomial: max must not be less than base"},
		{"Polynomial negative degree", func() { Polynomial(s, -1, 2*s) }, "backoff: Polynomial: degree must be finite and not negative"},
		{"Polynomial NaN degree", func() { Polynomial(s, nan, 2*s) }, "backoff: Polynomial: degree must be finite and not negative"},
		{"Polynomial infinite degree", func() { Polynomial(s, inf, 2*s) }, "backoff: Polynomial: degree must be finite and not negative"},

		{"FullJitter nil", func() { FullJitter(nil) }, "backoff: FullJitter: nil Func"},
		{"EqualJitter nil", func() { EqualJitter(nil) }, "backoff: EqualJitter: nil Func"},
		{"ProportionalJitter nil", func() { ProportionalJitter(nil, 0.1) }, "backoff: ProportionalJitter: nil Func"},
		{"ProportionalJitter negative fraction", func() { ProportionalJitter(Constant(s), -0.1) }, "backoff: ProportionalJitter: fraction must be in [0, 1]"},
		{"ProportionalJitter fraction above 1", func() { ProportionalJitter(Constant(s), 1.1) }, "backoff: ProportionalJitter: fraction must be in [0, 1]"},
		{"ProportionalJitter NaN fraction", func() { ProportionalJitter(Constant(s), nan) }, "backoff: ProportionalJitter: fraction must be in [0, 1]"},
		{"ProportionalJitter infinite fraction", func() { ProportionalJitter(Constant(s), inf) }, "backoff: ProportionalJitter: fraction must be in [0, 1]"},

		{"DecorrelatedJitter zero base", func() { DecorrelatedJitter(0, s) }, "backoff: DecorrelatedJitter: base must be positive"},
		{"DecorrelatedJitter negative base", func() { DecorrelatedJitter(-1, s) }, "backoff: DecorrelatedJitter: base must be positive"},
		{"DecorrelatedJitter max below base", func() { DecorrelatedJitter(2*s, s) }, "backoff: DecorrelatedJitter: max must not be less than base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}

// TestBackoffBounds checks, for many retry numbers and random numbers, that
// every Backoff stays within [0, cap·(1+fraction)], and that the schedules
// never decrease.
func TestBackoffBounds(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name     string
		b        Func
		cap      time.Duration
		fraction float64 // how far a jitter may exceed cap
		schedule bool    // deterministic and non-decreasing in n
	}{
		{"Constant", Constant(3 * s), 3 * s, 0, true},
		{"Linear", Linear(s, time.Minute), time.Minute, 0, true},
		{"Exponential", Exponential(50*time.Millisecond, 20*s), 20 * s, 0, true},
		{"Exponential uncapped", Exponential(1, maxDuration), maxDuration, 0, true},
		{"ExponentialBy", ExponentialBy(3*s, 1.5, time.Minute), time.Minute, 0, true},
		{"ExponentialBy uncapped", ExponentialBy(3*s, 1.01, maxDuration), maxDuration, 0, true},
		{"Fibonacci", Fibonacci(s, time.Hour), time.Hour, 0, true},
		{"Fibonacci uncapped", Fibonacci(1, maxDuration), maxDuration, 0, true},
		{"Polynomial", Polynomial(s, 2.5, time.Hour), time.Hour, 0, true},
		{"Polynomial uncapped", Polynomial(maxDuration/1000, 3, maxDuration), maxDuration, 0, true},
		{"Default", Default(), 20 * s, 0, false},
		{"DefaultThrottle", DefaultThrottle(), 20 * s, 0, false},
		{"FullJitter", FullJitter(Fibonacci(s, time.Minute)), time.Minute, 0, false},
		{"EqualJitter", EqualJitter(Linear(s, time.Minute)), time.Minute, 0, false},
		{"ProportionalJitter", ProportionalJitter(Exponential(s, time.Minute), 0.25), time.Minute, 0.25, false},
		{"ProportionalJitter full", ProportionalJitter(Exponential(s, time.Minute), 1), time.Minute, 1, false},
		{"ProportionalJitter uncapped", ProportionalJitter(Exponential(s, maxDuration), 0.5), maxDuration, 0, false},
		{"DecorrelatedJitter", DecorrelatedJitter(s, time.Minute), time.Minute, 0, false},
		{"DecorrelatedJitter uncapped", DecorrelatedJitter(s, maxDuration), maxDuration, 0, false},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rs := []float64{0, 0.5, 0.999999, math.Nextafter(1, 0)}
	rs = append(rs, invalidRands...)
	for range 200 {
		rs = append(rs, rng.Float64())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := math.Min(float64(tt.cap)*(1+tt.fraction), float64(maxDuration))
			var last time.Duration
			for n := 1; n <= 200; n++ {
				for _, prev := range []time.Duration{0, last, tt.cap, maxDuration} {
					for _, r := range rs {
						got := tt.b(n, prev, r)
						if got < 0 || float64(got) > limit {
							t.Fatalf("n = %d, prev = %v, r = %v: got %v, want it in [0, %.0fns]", n, prev, r, got, limit)
						}
					}
				}
				d := tt.b(n, last, 0.5)
				if tt.schedule && d < last {
					t.Fatalf("n = %d: got %v, want at least %v, the delay for n = %d", n, d, last, n-1)
				}
				last = d
			}
		})
	}
}

// TestDecorrelatedJitterChain feeds each delay back as prev, as a Transport
// does, and checks that the delays stay in [base, max].
func TestDecorrelatedJitterChain(t *testing.T) {
	const base, limit = 100 * time.Millisecond, 5 * time.Second
	b := DecorrelatedJitter(base, limit)
	rng := rand.New(rand.NewPCG(3, 4))
	var prev time.Duration
	reachedCap := false
	for n := 1; n <= 200; n++ {
		d := b(n, prev, rng.Float64())
		require.GreaterOrEqual(t, d, base, "n = %d: got %v, want at least %v", n, d, base)
		require.LessOrEqual(t, d, limit, "n = %d: got %v, want at most %v", n, d, limit)
		reachedCap = reachedCap || d == limit
		prev = d
	}
	assert.True(t, reachedCap, "200 retries never reached the cap")
}

func TestDefaultBackoffs(t *testing.T) {
	tests := []struct {
		name string
		b    Func
		want []time.Duration // with r just below 1, which gives the whole delay less 1ns
	}{
		{
			name: "Default",
			b:    Default(),
			want: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
				400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
				6400 * time.Millisecond, 12800 * time.Millisecond, 20 * time.Second, 20 * time.Second},
		},
		{
			name: "DefaultThrottle",
			b:    DefaultThrottle(),
			want: []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
				16 * time.Second, 20 * time.Second, 20 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				n := i + 1
				got := tt.b(n, 0, math.Nextafter(1, 0))
				assert.InDelta(t, float64(want), float64(got), 1, "n = %d: got %v, want just under %v", n, got, want)
				got = tt.b(n, 0, 0)
				assert.Zero(t, got, "n = %d, r = 0: got %v, want 0", n, got)
			}
		})
	}
}

func TestDefaultBackoffAllocs(t *testing.T) {
	b := Default()
	var sink time.Duration
	allocs := testing.AllocsPerRun(100, func() { sink += b(3, time.Second, 0.5) })
	assert.Zero(t, allocs, "got %v allocs per call, want 0", allocs)
}

func BenchmarkDefaultBackoff(b *testing.B) {
	backoff := Default()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = n%20 + 1
		backoff(n, time.Second, 0.5)
	}
}

func BenchmarkDefaultBackoffParallel(b *testing.B) {
	backoff := Default()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var sink time.Duration
		n := 0
		for pb.Next() {
			n = n%20 + 1
			sink += backoff(n, time.Second, 0.5)
		}
		_ = sink
	})
}

// FuzzBackoff checks that for any valid arguments every schedule stays in
// [base, max] and never decreases, and every jitter stays in its range.
func FuzzBackoff(f *testing.F) {
	f.Add(int64(50*time.Millisecond), int64(20*time.Second), 1, int64(0), 0.5, 1.5, 2.0, 0.2)
	f.Add(int64(time.Second), int64(time.Minute), 1_000_000, int64(time.Hour), 0.999999, 1.0, 0.5, 1.0)
	f.Add(int64(1), int64(math.MaxInt64), math.MaxInt, int64(math.MaxInt64), 1.0, 10.0, 3.0, 0.0)
	f.Add(int64(0), int64(0), 0, int64(-1), math.NaN(), 1.0, 0.0, 0.5)
	f.Fuzz(func(t *testing.T, base, limit int64, n int, prev int64, r, multiplier, degree, fraction float64) {
		lo, hi := nonNegative(base), nonNegative(limit)
		if hi < lo {
			lo, hi = hi, lo
		}
		if math.IsNaN(multiplier) || math.IsInf(multiplier, 0) || multiplier < 1 {
			multiplier = 2
		}
		if math.IsNaN(degree) || math.IsInf(degree, 0) || degree < 0 {
			degree = 1
		}
		if !(fraction >= 0 && fraction <= 1) {
			fraction = 0.5
		}
		p := time.Duration(prev)
		schedules := map[string]Func{
			"Constant":      Constant(lo),
			"Linear":        Linear(lo, hi),
			"Exponential":   Exponential(lo, hi),
			"ExponentialBy": ExponentialBy(lo, multiplier, hi),
			"Fibonacci":     Fibonacci(lo, hi),
			"Polynomial":    Polynomial(lo, degree, hi),
		}
		for name, b := range schedules {
			d := b(n, p, r)
			if d < lo || d > hi {
				t.Fatalf("%s(%v, %v)(%d): got %v, want it in [base, max]", name, lo, hi, n, d)
			}
			if n < math.MaxInt {
				if next := b(n+1, p, r); next < d {
					t.Fatalf("%s(%v, %v): got %v for n = %d, less than %v for n = %d", name, lo, hi, next, n+1, d, n)
				}
			}
			if j := FullJitter(b)(n, p, r); j < 0 || j > d || (d > 0 && j == d) {
				t.Fatalf("FullJitter(%s)(%d, %v, %v): got %v, want it in [0, %v)", name, n, p, r, j, d)
			}
			if j := EqualJitter(b)(n, p, r); j < d/2 || j > d || (d > 0 && j == d) {
				t.Fatalf("EqualJitter(%s)(%d, %v, %v): got %v, want it in [%v, %v)", name, n, p, r, j, d/2, d)
			}
			j := ProportionalJitter(b, fraction)(n, p, r)
			jlo, jhi := float64(d)*(1-fraction), math.Min(float64(d)*(1+fraction), float64(maxDuration))
			// Allow for rounding d to float64 and back.
			if float64(j) < jlo-2048 || float64(j) > jhi+2048 || j < 0 {
				t.Fatalf("ProportionalJitter(%s, %v)(%d, %v, %v): got %v, want it in [%.0fns, %.0fns]", name, fraction, n, p, r, j, jlo, jhi)
			}
		}
		if lo > 0 {
			d := DecorrelatedJitter(lo, hi)(n, p, r)
			if d < lo || d > hi {
				t.Fatalf("DecorrelatedJitter(%v, %v)(%d, %v, %v): got %v, want it in [base, max]", lo, hi, n, p, r, d)
			}
			if p3 := max(p, lo); p3 <= maxDuration/3 && d > 3*p3 {
				t.Fatalf("DecorrelatedJitter(%v, %v)(%d, %v, %v): got %v, want at most 3·%v", lo, hi, n, p, r, d, p3)
			}
		}
	})
}

// nonNegative maps an int64 onto the Durations from 0 to the largest.
func nonNegative(x int64) time.Duration {
	if x < 0 {
		return time.Duration(-(x + 1))
	}
	return time.Duration(x)
}
