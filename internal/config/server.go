// Package config holds the settings of the features that have a package
// of their own, as structs with exported fields: the feature's package sets
// them through its options, and the root package reads them, without
// either importing the other.
package config

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/deadline"
)

// Server is the configuration of a server.Handler.
type Server struct {
	// Formats are the deadline headers read on incoming requests; nil: none
	// is read.
	Formats []deadline.Format
	// MaxDeadline caps an incoming deadline.
	MaxDeadline time.Duration
	// Margin is taken off an incoming deadline for the way back.
	Margin time.Duration
	// OnMalformed, if not nil, is called with each malformed deadline value.
	OnMalformed func(r *http.Request, format deadline.Format, value string)
	// Tuned names the first option given that only tunes Deadline.
	Tuned string
}
