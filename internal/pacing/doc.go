// Package pacing decides when each request to a host may be sent, so that
// the host is sent requests at the rate it accepts. This file set reads the
// quotas that hosts announce in their responses' headers.
package pacing
