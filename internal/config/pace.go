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
}

// NewPace returns the configuration of pacing before any option: a wait of
// at most 10 s, no partition header, 1024 hosts. Package pace's option docs
// state these defaults.
func NewPace() Pace {
	return Pace{MaxWait: 10 * time.Second, MaxHosts: 1024}
}
