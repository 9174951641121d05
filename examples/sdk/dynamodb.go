package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/httptest"
)

// runDynamoDB makes four calls through the AWS SDK's DynamoDB client and
// retryhttp, each to a fake of DynamoDB behind a server that misbehaves in
// one way, and writes to w what the client saw, each retry, and what the
// server counted. opts are added to the Transport's.
//
// Every DynamoDB call is a POST to "/" without an idempotency key; the
// operation is named in X-Amz-Target. Such a POST is resent only when it is
// declared resendable, and what is safe to resend depends on the operation
// and its input:
//
//   - Reads change nothing, so the Transport declares them resendable by
//     their X-Amz-Target (dynamoDBRead).
//   - A PutItem without a condition writes the whole item: writing the
//     same item twice leaves the table as writing it once, so such a call
//     is declared resendable by its context (retryhttp.Resendable).
//   - A PutItem with a condition is not: if the first attempt wrote the
//     item and its response was lost, the resend fails its own condition,
//     and the caller is told that a write which succeeded failed. So is an
//     UpdateItem that adds to a number, which a resend adds twice.
func runDynamoDB(w io.Writer, opts ...retryhttp.Option) error {
	tr := retryhttp.New(append([]retryhttp.Option{
		// Read DynamoDB's error types (throttling is a 400) first.
		retryhttp.WithClassifier(retryhttp.Chain{retryhttp.AWSErrorClassifier(), retryhttp.DefaultClassifier()}),
		retryhttp.WithResendable(dynamoDBRead),
		printRetries(w),
	}, opts...)...)
	defer tr.CloseIdleConnections()
	httpClient := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx := context.Background()

	db := newFakeDynamoDB()
	var attempts int
	fmt.Fprintln(w, "aws-sdk-go-v2 DynamoDB (Retryer: aws.NopRetryer{}) over retryhttp, against a local fake of DynamoDB.")

	// 1. An unconditional write, declared resendable for this call.
	srv := newDynamoDBServer(db, httptest.Sequence(dynamoDBFault(http.StatusServiceUnavailable, "ServiceUnavailable",
		"The service is currently unavailable."), httptest.ResetAfterRead()))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "1. PutItem order o-1 to table orders, no condition, with retryhttp.Resendable(ctx).")
	fmt.Fprintln(w, "   The server answers 503, then writes the item and resets the connection.")
	_, err := newDynamoDBClient(srv.URL, httpClient).PutItem(retryhttp.Resendable(ctx), orderPut("o-1", 2000, false))
	if err != nil {
		return fmt.Errorf("putting o-1: %w", err)
	}
	fmt.Fprintln(w, "   client: done")
	rec := srv.Requests()[0]
	writes, items := db.Writes()
	fmt.Fprintf(w, "   server: %s, handler runs: %d, the same body each time: %t\n", attempted(rec), rec.Executions, rec.SameBody)
	fmt.Fprintf(w, "   server: items written: %d, items in the table: %d (the same item, twice)\n", writes, items)
	attempts += srv.Attempts()

	// 2. A read, resendable by the Transport's predicate.
	srv = newDynamoDBServer(db, httptest.Sequence(
		dynamoDBFault(http.StatusServiceUnavailable, "ServiceUnavailable", "The service is currently unavailable."),
		dynamoDBFault(http.StatusBadRequest, "ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded.")))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "2. GetItem o-1: resendable, since WithResendable(dynamoDBRead) names GetItem.")
	fmt.Fprintln(w, "   The server answers 503, then 400 ProvisionedThroughputExceededException.")
	got, err := newDynamoDBClient(srv.URL, httpClient).GetItem(ctx, orderKey("o-1"))
	if err != nil {
		return fmt.Errorf("getting o-1: %w", err)
	}
	fmt.Fprintf(w, "   client: got %s, total %s\n", attributeString(got.Item, "id"), attributeNumber(got.Item, "total"))
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   server: %s, handler runs: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	// 3. A conditional write: not declared resendable.
	srv = newDynamoDBServer(db, httptest.First(1, httptest.ResetAfterRead()))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "3. PutItem order o-2 if it does not exist (attribute_not_exists(id)), not declared resendable.")
	fmt.Fprintln(w, "   The server writes the item, then resets the connection.")
	_, err = newDynamoDBClient(srv.URL, httpClient).PutItem(ctx, orderPut("o-2", 500, true))
	var rerr *retryhttp.Error
	if !errors.As(err, &rerr) {
		return fmt.Errorf("putting o-2: got %v, want the connection's error", err)
	}
	fmt.Fprintf(w, "   client: error after %d attempt: %s\n", rerr.Attempts, errText(rerr.Err))
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   server: %s, handler runs: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	// 4. What a resend of 3 would have met.
	srv = newDynamoDBServer(db, httptest.Pass())
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "4. The same PutItem again, as a resend would have sent it.")
	_, err = newDynamoDBClient(srv.URL, httpClient).PutItem(ctx, orderPut("o-2", 500, true))
	var condErr *types.ConditionalCheckFailedException
	if !errors.As(err, &condErr) {
		return fmt.Errorf("putting o-2 again: got %v, want ConditionalCheckFailedException", err)
	}
	fmt.Fprintf(w, "   client: %s: %s; the write had succeeded\n", condErr.ErrorCode(), condErr.ErrorMessage())
	attempts += srv.Attempts()

	writes, items = db.Writes()
	summary(w, 4, attempts, fmt.Sprintf("items written: %d, items in the table: %d", writes, items))
	return nil
}

// dynamoDBRead reports the DynamoDB calls that change nothing, and so may
// be resent whatever became of an earlier attempt: a predicate for
// retryhttp.WithResendable.
func dynamoDBRead(r *http.Request) bool {
	switch r.Header.Get("X-Amz-Target") {
	case "DynamoDB_20120810.GetItem", "DynamoDB_20120810.BatchGetItem",
		"DynamoDB_20120810.Query", "DynamoDB_20120810.Scan",
		"DynamoDB_20120810.TransactGetItems", "DynamoDB_20120810.DescribeTable",
		"DynamoDB_20120810.ListTables":
		return true
	}
	return false
}

// newDynamoDBClient returns a DynamoDB client that sends its requests
// through httpClient to the endpoint at url, and leaves retrying to
// httpClient.
func newDynamoDBClient(url string, httpClient *http.Client) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       fakeRegion,
		Credentials:  fakeCredentials,
		BaseEndpoint: aws.String(url),
		HTTPClient:   httpClient,
		Retryer:      aws.NopRetryer{},
	})
}

// newDynamoDBServer serves db behind the fault f. The attempts of one SDK
// call are one logical request: the SDK gives each call an invocation ID,
// which retryhttp sends unchanged on every attempt.
func newDynamoDBServer(db *fakeDynamoDB, f httptest.Fault) *httptest.Server {
	return httptest.NewServer(db, f, httptest.KeyHeader("Amz-Sdk-Invocation-Id"))
}

// dynamoDBFault answers with a DynamoDB error; the handler does not run.
func dynamoDBFault(status int, typ, message string) httptest.Fault {
	h, body := dynamoDBError(typ, message)
	return httptest.Respond(status, h, body)
}

func orderKey(id string) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{
		TableName: aws.String("orders"),
		Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	}
}

// orderPut writes an order; ifAbsent adds the condition that no order with
// that id exists yet.
func orderPut(id string, total int, ifAbsent bool) *dynamodb.PutItemInput {
	in := &dynamodb.PutItemInput{
		TableName: aws.String("orders"),
		Item: map[string]types.AttributeValue{
			"id":    &types.AttributeValueMemberS{Value: id},
			"total": &types.AttributeValueMemberN{Value: fmt.Sprint(total)},
		},
	}
	if ifAbsent {
		in.ConditionExpression = aws.String("attribute_not_exists(id)")
	}
	return in
}

func attributeString(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attributeNumber(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}
