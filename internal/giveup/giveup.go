// Package giveup defines the type of retryhttp.GiveUpReason, so that a
// package the root imports (resume, whose Error carries one) can name it
// without importing the root.
package giveup

// Reason is retryhttp.GiveUpReason; its documentation and values are there.
type Reason string
