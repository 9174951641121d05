package main

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/httptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	dynamoDB503         = dynamoDBFault(http.StatusServiceUnavailable, "ServiceUnavailable", "The service is currently unavailable.")
	dynamoDBThrottling  = dynamoDBFault(http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput.")
	dynamoDBProvisioned = dynamoDBFault(http.StatusBadRequest, "ProvisionedThroughputExceededException",
		"The level of configured provisioned throughput for the table was exceeded.")
	dynamoDBValidation = dynamoDBFault(http.StatusBadRequest, "ValidationException", "One or more parameter values were invalid.")
)

// TestDynamoDB counts, for each way a DynamoDB call can fail, the attempts
// that reached the fake, the attempts that ran its handler, and the items
// it wrote. Every call is a POST without an idempotency key: it is resent
// only when declared resendable, by the Transport's predicate (reads) or by
// its context (this call).
func TestDynamoDB(t *testing.T) {
	aws := retryhttp.WithClassifier(retryhttp.Chain{retryhttp.AWSErrorClassifier(), retryhttp.DefaultClassifier()})
	reads := retryhttp.WithResendable(dynamoDBRead)
	resendable := retryhttp.Resendable
	tests := []struct {
		name       string
		opts       []retryhttp.Option
		ctx        func(context.Context) context.Context
		put        bool // PutItem; otherwise GetItem
		ifAbsent   bool // the PutItem's condition
		fault      httptest.Fault
		attempts   int
		executions int
		writes     int
		wantErr    string // the error's AWS code, or "reset"; "" for success
	}{
		// The failure the issue reports: a read, not declared, is not resent.
		{name: "GetItem, 503, not declared", opts: []retryhttp.Option{aws}, fault: httptest.First(1, dynamoDB503),
			attempts: 1, executions: 0, wantErr: "ServiceUnavailable"},
		{name: "GetItem, 503 and throttling, declared by the Transport", opts: []retryhttp.Option{aws, reads},
			fault: httptest.Sequence(dynamoDB503, dynamoDBProvisioned), attempts: 3, executions: 1},
		{name: "GetItem, throttling twice, declared by the context", opts: []retryhttp.Option{aws}, ctx: resendable,
			fault: httptest.First(2, dynamoDBThrottling), attempts: 3, executions: 1},
		{name: "GetItem, reset after the read, declared", opts: []retryhttp.Option{aws, reads},
			fault: httptest.First(1, httptest.ResetAfterRead()), attempts: 2, executions: 2},
		{name: "GetItem, throttling without AWSErrorClassifier", opts: []retryhttp.Option{reads},
			fault: httptest.First(1, dynamoDBThrottling), attempts: 1, executions: 0, wantErr: "ThrottlingException"},
		{name: "GetItem, validation error", opts: []retryhttp.Option{aws, reads},
			fault: httptest.First(1, dynamoDBValidation), attempts: 1, executions: 0, wantErr: "ValidationException"},
		{name: "GetItem, three 503s", opts: []retryhttp.Option{aws, reads},
			fault: httptest.First(3, dynamoDB503), attempts: 3, executions: 0, wantErr: "ServiceUnavailable"},
		{name: "GetItem, NoRetry for the call", opts: []retryhttp.Option{aws, reads}, ctx: retryhttp.NoRetry,
			fault: httptest.First(1, dynamoDB503), attempts: 1, executions: 0, wantErr: "ServiceUnavailable"},
		{name: "GetItem, MaxAttempts 2 for the call", opts: []retryhttp.Option{aws, reads},
			ctx:   func(ctx context.Context) context.Context { return retryhttp.MaxAttempts(ctx, 2) },
			fault: httptest.First(2, dynamoDB503), attempts: 2, executions: 0, wantErr: "ServiceUnavailable"},

		// Writes: the Transport's predicate names reads only.
		{name: "PutItem, 503 and throttling, declared by the context", opts: []retryhttp.Option{aws, reads}, ctx: resendable,
			put: true, fault: httptest.Sequence(dynamoDB503, dynamoDBThrottling), attempts: 3, executions: 1, writes: 1},
		{name: "PutItem, reset after the write, declared by the context", opts: []retryhttp.Option{aws, reads}, ctx: resendable,
			put: true, fault: httptest.First(1, httptest.ResetAfterRead()), attempts: 2, executions: 2, writes: 2},
		{name: "PutItem, 503, not declared", opts: []retryhttp.Option{aws, reads},
			put: true, fault: httptest.First(1, dynamoDB503), attempts: 1, executions: 0, writes: 0, wantErr: "ServiceUnavailable"},
		{name: "conditional PutItem, throttling, not declared", opts: []retryhttp.Option{aws, reads}, put: true, ifAbsent: true,
			fault: httptest.First(1, dynamoDBThrottling), attempts: 1, executions: 0, writes: 0, wantErr: "ThrottlingException"},
		{name: "conditional PutItem, reset after the write, not declared", opts: []retryhttp.Option{aws, reads}, put: true, ifAbsent: true,
			fault: httptest.First(1, httptest.ResetAfterRead()), attempts: 1, executions: 1, writes: 1, wantErr: "reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newFakeDynamoDB()
			srv := newDynamoDBServer(db, tt.fault)
			defer srv.Close()
			tr := retryhttp.New(append(tt.opts, fast...)...)
			defer tr.CloseIdleConnections()
			client := newDynamoDBClient(srv.URL, &http.Client{Transport: tr})
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx(ctx)
			}

			var err error
			if tt.put {
				_, err = client.PutItem(ctx, orderPut("o-1", 2000, tt.ifAbsent))
			} else {
				_, err = client.GetItem(ctx, orderKey("o-1"))
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
			require.Len(t, srv.Requests(), 1, "every attempt carries the call's invocation ID")
			rec := srv.Requests()[0]
			assert.Equal(t, tt.attempts, rec.Attempts, "attempts: %v", rec.Outcomes)
			assert.Equal(t, tt.executions, rec.Executions, "executions")
			assert.True(t, rec.SameBody, "the same body on every attempt")
			assert.Zero(t, db.Rejected(), "requests with a signature that did not match")
			if tt.put {
				writes, _ := db.Writes()
				assert.Equal(t, tt.writes, writes, "items written")
			}
		})
	}
}

// TestDynamoDBConditionalResend shows why a conditional PutItem is not
// declared resendable: had the resend gone out after a write whose response
// was lost, the caller would be told that the write failed.
func TestDynamoDBConditionalResend(t *testing.T) {
	db := newFakeDynamoDB()
	srv := newDynamoDBServer(db, httptest.First(1, httptest.ResetAfterRead()))
	defer srv.Close()
	tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithResendable(func(*http.Request) bool { return true })}, fast...)...)
	defer tr.CloseIdleConnections()

	_, err := newDynamoDBClient(srv.URL, &http.Client{Transport: tr}).PutItem(t.Context(), orderPut("o-1", 2000, true))
	var condErr *types.ConditionalCheckFailedException
	require.True(t, errors.As(err, &condErr), "got %v", err)
	writes, items := db.Writes()
	assert.Equal(t, 1, writes, "the item was written")
	assert.Equal(t, 1, items)
	assert.Equal(t, 2, srv.Attempts())
}
