package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dynalite returns the URL of the DynamoDB the tests share: dynalite, with
// table orders.
func dynalite(t *testing.T) string {
	return sharedEmulator(t, "dynalite", createOrdersTable).URL
}

// itemIDs numbers the items the tests write, so that a test run again in
// the same process (-count) meets none of its earlier items.
var itemIDs atomic.Int64

// itemID returns an id no other test in this process has used.
func itemID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, itemIDs.Add(1))
}

// DynamoDB's errors as DynamoDB sends them; see dynamoDBFault.
var (
	dynamoDB503         = dynamoDBFault(http.StatusServiceUnavailable, "ServiceUnavailable", "The service is currently unavailable or busy.")
	dynamoDB500         = dynamoDBFault(http.StatusInternalServerError, "InternalServerError", "Internal server error")
	dynamoDBThrottling  = dynamoDBFault(http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput.")
	dynamoDBProvisioned = dynamoDBFault(http.StatusBadRequest, "ProvisionedThroughputExceededException", provisionedMessage)
	dynamoDBValidation  = dynamoDBFault(http.StatusBadRequest, "ValidationException", "One or more parameter values were invalid.")
)

// The recipe's options: those of docs/sdk.md.
var (
	awsClassifier = retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default()))
	dynamoDBReads = retryhttp.WithResendable(dynamoDBRead)
)

// TestDynamoDB counts, for each way a DynamoDB call can fail, the attempts
// that reached the proxy in front of dynalite, and the attempts dynalite
// executed. Every call is a POST without an idempotency key: it is resent
// only when declared resendable, by the Transport's predicate (reads) or by
// its context (this call).
func TestDynamoDB(t *testing.T) {
	url := dynalite(t)
	resendable := retryhttp.Resendable
	tests := []struct {
		name       string
		opts       []retryhttp.Option
		ctx        func(context.Context) context.Context
		put        bool // PutItem; otherwise GetItem
		ifAbsent   bool // the PutItem's condition
		fault      retryhttptest.Fault
		attempts   int
		executions int
		wantErr    string // the error's AWS code, or "reset"; "" for success
	}{
		{name: "GetItem, 503, not declared", opts: []retryhttp.Option{awsClassifier}, fault: retryhttptest.First(1, dynamoDB503),
			attempts: 1, executions: 0, wantErr: "ServiceUnavailable"},
		{name: "GetItem, 503 and throttling, declared by the Transport", opts: []retryhttp.Option{awsClassifier, dynamoDBReads},
			fault: retryhttptest.Sequence(dynamoDB503, dynamoDBProvisioned), attempts: 3, executions: 1},
		{name: "GetItem, throttling twice, declared by the context", opts: []retryhttp.Option{awsClassifier}, ctx: resendable,
			fault: retryhttptest.First(2, dynamoDBThrottling), attempts: 3, executions: 1},
		{name: "GetItem, reset after the read, declared", opts: []retryhttp.Option{awsClassifier, dynamoDBReads},
			fault: retryhttptest.First(1, retryhttptest.ResetAfterRead()), attempts: 2, executions: 2},
		{name: "GetItem, throttling without awsretry.Classifier", opts: []retryhttp.Option{dynamoDBReads},
			fault: retryhttptest.First(1, dynamoDBThrottling), attempts: 1, executions: 0, wantErr: "ThrottlingException"},
		{name: "GetItem, validation error", opts: []retryhttp.Option{awsClassifier, dynamoDBReads},
			fault: retryhttptest.First(1, dynamoDBValidation), attempts: 1, executions: 0, wantErr: "ValidationException"},
		{name: "GetItem, three 503s", opts: []retryhttp.Option{awsClassifier, dynamoDBReads},
			fault: retryhttptest.First(3, dynamoDB503), attempts: 3, executions: 0, wantErr: "ServiceUnavailable"},
		{name: "GetItem, one attempt for the call", opts: []retryhttp.Option{awsClassifier, dynamoDBReads}, ctx: func(ctx context.Context) context.Context { return retryhttp.MaxAttempts(ctx, 1) },
			fault: retryhttptest.First(1, dynamoDB503), attempts: 1, executions: 0, wantErr: "ServiceUnavailable"},
		{name: "GetItem, MaxAttempts 2 for the call", opts: []retryhttp.Option{awsClassifier, dynamoDBReads},
			ctx:   func(ctx context.Context) context.Context { return retryhttp.MaxAttempts(ctx, 2) },
			fault: retryhttptest.First(2, dynamoDB503), attempts: 2, executions: 0, wantErr: "ServiceUnavailable"},

		// Writes: the Transport's predicate names reads only.
		{name: "PutItem, 503 and throttling, declared by the context", opts: []retryhttp.Option{awsClassifier, dynamoDBReads}, ctx: resendable,
			put: true, fault: retryhttptest.Sequence(dynamoDB503, dynamoDBThrottling), attempts: 3, executions: 1},
		{name: "PutItem, reset after the write, declared by the context", opts: []retryhttp.Option{awsClassifier, dynamoDBReads}, ctx: resendable,
			put: true, fault: retryhttptest.First(1, retryhttptest.ResetAfterRead()), attempts: 2, executions: 2},
		{name: "PutItem, 503, not declared", opts: []retryhttp.Option{awsClassifier, dynamoDBReads},
			put: true, fault: retryhttptest.First(1, dynamoDB503), attempts: 1, executions: 0, wantErr: "ServiceUnavailable"},
		{name: "conditional PutItem, throttling, not declared", opts: []retryhttp.Option{awsClassifier, dynamoDBReads}, put: true, ifAbsent: true,
			fault: retryhttptest.First(1, dynamoDBThrottling), attempts: 1, executions: 0, wantErr: "ThrottlingException"},
		{name: "conditional PutItem, reset after the write, not declared", opts: []retryhttp.Option{awsClassifier, dynamoDBReads}, put: true, ifAbsent: true,
			fault: retryhttptest.First(1, retryhttptest.ResetAfterRead()), attempts: 1, executions: 1, wantErr: "reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := itemID("TestDynamoDB")
			proxy := newDynamoDBProxy(url, tt.fault)
			defer proxy.Close()
			tr := retryhttp.New(append(tt.opts, fast...)...)
			defer tr.CloseIdleConnections()
			client := newDynamoDBClient(proxy.URL, &http.Client{Transport: tr})
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx(ctx)
			}

			var err error
			if tt.put {
				_, err = client.PutItem(ctx, orderPut(id, 2000, tt.ifAbsent))
			} else {
				_, err = client.GetItem(ctx, orderKey(id))
			}

			switch tt.wantErr {
			case "":
				require.NoError(t, err)
			case "reset":
				var rerr *retryhttp.Error
				require.ErrorAs(t, err, &rerr)
				assert.Equal(t, 1, rerr.Attempts)
			default:
				var apiErr smithy.APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tt.wantErr, apiErr.ErrorCode())
			}
			require.Len(t, proxy.Requests(), 1, "every attempt carries the call's invocation ID")
			rec := proxy.Requests()[0]
			assert.Equal(t, tt.attempts, rec.Attempts, "attempts: %v", rec.Outcomes)
			assert.Equal(t, tt.executions, rec.Executions, "executions")
			assert.True(t, rec.SameBody, "the same body on every attempt")
			if tt.put {
				out, err := newDynamoDBClient(url, http.DefaultClient).GetItem(t.Context(), orderKey(id))
				require.NoError(t, err)
				assert.Equal(t, tt.executions > 0, out.Item != nil, "the item is in the table only if a put ran")
			}
		})
	}
}

// dynamoDBReadFailures are the common failures of a DynamoDB read, each
// answered as DynamoDB answers it, for the first attempt of a call.
var dynamoDBReadFailures = []struct {
	name  string
	fault retryhttptest.Fault
}{
	{"503 ServiceUnavailable", dynamoDB503},
	{"500 InternalServerError", dynamoDB500},
	{"500 ThrottlingException", dynamoDBFault(http.StatusInternalServerError, "ThrottlingException", "Rate of requests exceeds the allowed throughput.")},
	{"400 ProvisionedThroughputExceededException", dynamoDBProvisioned},
	{"400 ThrottlingException", dynamoDBThrottling},
	{"400 RequestLimitExceeded", dynamoDBFault(http.StatusBadRequest, "RequestLimitExceeded",
		"Throughput exceeds the current throughput limit for your account. Please contact AWS Support at https://aws.amazon.com/support request a limit increase")},
	{"429 ThrottlingException", dynamoDBFault(http.StatusTooManyRequests, "ThrottlingException", "Rate of requests exceeds the allowed throughput.")},
	{"reset after the read", retryhttptest.ResetAfterRead()},
}

// sdkRetryer is the SDK's own standard retryer, its attempts, retryable
// errors and retry token bucket as they are, with its waits cut to 1 ms
// so that the test does not take seconds.
func sdkRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	})
}

// TestDynamoDBSideBySide runs a GetItem through each common failure twice:
// with the SDK's own retryer over a plain transport, and with the recipe of
// docs/sdk.md (the SDK's retries off; retryhttp with awsretry.Classifier and
// reads declared resendable). The recipe must rescue every failure the
// SDK's retryer rescues.
func TestDynamoDBSideBySide(t *testing.T) {
	url := dynalite(t)
	for _, f := range dynamoDBReadFailures {
		t.Run(f.name, func(t *testing.T) {
			id := itemID("side-by-side")
			_, err := newDynamoDBClient(url, http.DefaultClient).PutItem(t.Context(), orderPut(id, 100, false))
			require.NoError(t, err)

			// The SDK's own retryer, over a transport of its own.
			sdkProxy := newDynamoDBProxy(url, retryhttptest.First(1, f.fault))
			defer sdkProxy.Close()
			o := dynamoDBOptions(sdkProxy.URL, &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()})
			o.Retryer = sdkRetryer()
			_, sdkErr := dynamodb.New(o).GetItem(t.Context(), orderKey(id))

			// The recipe.
			proxy := newDynamoDBProxy(url, retryhttptest.First(1, f.fault))
			defer proxy.Close()
			tr := retryhttp.New(append([]retryhttp.Option{awsClassifier, dynamoDBReads}, fast...)...)
			defer tr.CloseIdleConnections()
			out, err := newDynamoDBClient(proxy.URL, &http.Client{Transport: tr}).GetItem(t.Context(), orderKey(id))

			t.Logf("SDK retryer: %s, error %v; recipe: %s, error %v", attempted(sdkProxy.Requests()[0]), sdkErr, attempted(proxy.Requests()[0]), err)
			require.NoError(t, sdkErr, "the SDK's retryer rescues it")
			require.NoError(t, err, "so the recipe must")
			assert.Equal(t, id, attributeString(out.Item, "id"))
			assert.Equal(t, 2, proxy.Attempts())
		})
	}
}

// TestDynamoDBFinalErrorsIntact checks that errors that are final reach
// the SDK intact, type and message, after one attempt: one the proxy sends
// as DynamoDB does, and one dynalite itself sends.
func TestDynamoDBFinalErrorsIntact(t *testing.T) {
	url := dynalite(t)
	tr := retryhttp.New(append([]retryhttp.Option{awsClassifier, dynamoDBReads}, fast...)...)
	defer tr.CloseIdleConnections()

	proxy := newDynamoDBProxy(url, retryhttptest.First(1, dynamoDBValidation))
	defer proxy.Close()
	_, err := newDynamoDBClient(proxy.URL, &http.Client{Transport: tr}).GetItem(t.Context(), orderKey(itemID("final")))
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "ValidationException", apiErr.ErrorCode())
	assert.Equal(t, "One or more parameter values were invalid.", apiErr.ErrorMessage())
	assert.Equal(t, 1, proxy.Attempts())

	proxy = newDynamoDBProxy(url, retryhttptest.Pass())
	defer proxy.Close()
	client := newDynamoDBClient(proxy.URL, &http.Client{Transport: tr})
	id := itemID("final")
	_, err = client.PutItem(t.Context(), orderPut(id, 1, true))
	require.NoError(t, err)
	_, err = client.PutItem(retryhttp.Resendable(t.Context()), orderPut(id, 1, true))
	var condErr *types.ConditionalCheckFailedException
	require.True(t, errors.As(err, &condErr), "got %v", err)
	assert.Equal(t, "The conditional request failed", condErr.ErrorMessage())
	assert.Equal(t, 2, proxy.Attempts(), "one attempt each")
}

// TestDynamoDBConditionalResend shows why a conditional PutItem is not
// declared resendable: had the resend gone out after a write whose response
// was lost, the caller would be told that the write failed.
func TestDynamoDBConditionalResend(t *testing.T) {
	url := dynalite(t)
	proxy := newDynamoDBProxy(url, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer proxy.Close()
	tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithResendable(func(*http.Request) bool { return true })}, fast...)...)
	defer tr.CloseIdleConnections()

	_, err := newDynamoDBClient(proxy.URL, &http.Client{Transport: tr}).PutItem(t.Context(), orderPut(itemID("conditional-resend"), 2000, true))
	var condErr *types.ConditionalCheckFailedException
	require.True(t, errors.As(err, &condErr), "got %v", err)
	assert.Equal(t, 2, proxy.Attempts())
	assert.Equal(t, 2, proxy.Executions(), "the first attempt wrote the item")
}
