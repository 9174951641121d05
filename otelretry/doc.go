// Package otelretry makes a retryhttp Transport observable with
// OpenTelemetry.
package otelretry
