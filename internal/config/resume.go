package config

import "time"

// Resume is the configuration of the resumption of response bodies:
// package resume's options set it, and the root package reads it.
type Resume struct {
	// Limit is the most resumes one response body gets, at least 1.
	Limit int
	// StallTimeout is how long a Read of a resumable body may wait
	// without a byte before the body counts as cut; 0 turns stall
	// detection off.
	StallTimeout time.Duration
}

// NewResume returns the configuration of resumption that the root's
// WithResume() and New() use before any option: 10 resumes per body, a
// stall after 10 s. Package resume's option docs state these defaults.
func NewResume() Resume {
	return Resume{Limit: 10, StallTimeout: 10 * time.Second}
}
