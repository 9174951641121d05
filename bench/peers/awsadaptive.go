package peers

import (
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// AWSAdaptive is the name of the AWS SDK for Go v2's adaptive retry mode,
// as it appears in tables.
const AWSAdaptive = "aws-sdk-go-v2 adaptive"

// NewAWSAdaptive returns a RoundTripper that drives the AWS SDK for Go v2's
// adaptive retry mode (retry.NewAdaptiveMode) around base (the SDK's
// default transport when base is nil), as NewAWS drives the Standard
// retryer, with the same configuration of the Standard retryer the mode is
// built on. Before each attempt, GetAttemptToken takes a token from the
// mode's client-side rate limiter, and waits for one when it has none;
// the release after the attempt tells the limiter whether it was
// throttled. The limiter is off until the first throttle, then sets its
// rate as CUBIC does from the rate it measured the client sending.
//
// The mode learns from throttle errors alone, which it knows by their
// service error codes (ThrottlingException, SlowDown, ...); a plain HTTP
// server sends none, so a 429 counts as a throttle here (Throttle429), as
// NewAWS makes it retryable. The SDK never reads Retry-After, nor quota
// headers.
func NewAWSAdaptive(base http.RoundTripper, c Config) http.RoundTripper {
	if base == nil {
		base = OwnBase(AWS, nil)
	}
	r := retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
		o.Throttles = append(o.Throttles, Throttle429)
		o.StandardOptions = append(o.StandardOptions, standardOptions(c), func(o *retry.StandardOptions) {
			o.Throttles = append(o.Throttles, Throttle429)
		})
	})
	return &awsTransport{base: base, retryer: r}
}

// Throttle429 is the SDK's throttle check for an HTTP status: a
// response error carrying 429 is a throttle, and it has no opinion on any
// other error.
var Throttle429 = retry.IsErrorThrottleFunc(func(err error) aws.Ternary {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusTooManyRequests {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
})
