package config

import "time"

// Pace configures pacing to a quota: what the root starts from, and what
// each pace.Option changes.
type Pace struct {
	// MaxWait is the longest a request may wait for its turn; one that
	// would wait longer fails at once, never sent.
	MaxWait time.Duration
	// PartitionHeader, in canonical form, is the request header whose
	// values split a host's requests into partitions paced apart; "" keys
	// by host alone.
	PartitionHeader string
	// MaxHosts is how many hosts (partitions) are remembered at most.
	MaxHosts int
	// Quotas holds the quotas declared in advance, in requests a second,
	// by host as wire.MakeKey writes it; nil when none is.
	Quotas map[string]float64
	// RetryAfterLimit is the longest a Retry-After holds a host's turns:
	// the Transport's limit on a Retry-After it waits for (a minute when
	// not positive).
	RetryAfterLimit time.Duration
	// Store, if not nil, is the pace.Store the pace is shared through
	// (package pace imports this one).
	Store any
}

// NewPace returns the configuration of pacing before any option: a wait of
// at most 10 s, no partition header, 1024 hosts. Package pace's option docs
// state these defaults.
func NewPace() Pace {
	return Pace{MaxWait: 10 * time.Second, MaxHosts: 1024}
}
