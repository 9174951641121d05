package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// runDynamoDB makes four calls through the AWS SDK's DynamoDB client and
// retryhttp to dynalite, an implementation of DynamoDB, each behind a proxy
// that misbehaves in one way, and writes to w what the client saw, each
// retry, and what the proxy counted. opts are added to the Transport's.
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
		retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
		retryhttp.WithResendable(dynamoDBRead),
		printRetries(w),
	}, opts...)...)
	defer tr.CloseIdleConnections()
	httpClient := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx := context.Background()

	db, err := startEmulator("dynalite")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := createOrdersTable(ctx, db.URL); err != nil {
		return err
	}
	var attempts int
	fmt.Fprintln(w, "aws-sdk-go-v2 DynamoDB (Retryer: aws.NopRetryer{}) over retryhttp, against dynalite behind a faulty proxy.")

	// 1. An unconditional write, declared resendable for this call.
	proxy := newDynamoDBProxy(db.URL, retryhttptest.Sequence(
		dynamoDBFault(http.StatusServiceUnavailable, "ServiceUnavailable", "The service is currently unavailable or busy."),
		retryhttptest.ResetAfterRead()))
	defer proxy.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "1. PutItem order o-1 to table orders, no condition, with retryhttp.Resendable(ctx).")
	fmt.Fprintln(w, "   The proxy answers 503; then DynamoDB writes the item and the proxy resets the connection.")
	_, err = newDynamoDBClient(proxy.URL, httpClient).PutItem(retryhttp.Resendable(ctx), orderPut("o-1", 2000, false))
	if err != nil {
		return fmt.Errorf("putting o-1: %w", err)
	}
	fmt.Fprintln(w, "   client: done")
	rec := proxy.Requests()[0]
	fmt.Fprintf(w, "   proxy: %s, executed by DynamoDB: %d, the same body each time: %t\n", attempted(rec), rec.Executions, rec.SameBody)
	attempts += proxy.Attempts()

	// 2. A read, resendable by the Transport's predicate.
	proxy = newDynamoDBProxy(db.URL, retryhttptest.Sequence(
		dynamoDBFault(http.StatusServiceUnavailable, "ServiceUnavailable", "The service is currently unavailable or busy."),
		dynamoDBFault(http.StatusBadRequest, "ProvisionedThroughputExceededException", provisionedMessage)))
	defer proxy.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "2. GetItem o-1: resendable, since WithResendable(dynamoDBRead) names GetItem.")
	fmt.Fprintln(w, "   The proxy answers 503, then 400 ProvisionedThroughputExceededException, its code only in the body.")
	got, err := newDynamoDBClient(proxy.URL, httpClient).GetItem(ctx, orderKey("o-1"))
	if err != nil {
		return fmt.Errorf("getting o-1: %w", err)
	}
	fmt.Fprintf(w, "   client: got %s, total %s\n", attributeString(got.Item, "id"), attributeNumber(got.Item, "total"))
	rec = proxy.Requests()[0]
	fmt.Fprintf(w, "   proxy: %s, executed by DynamoDB: %d\n", attempted(rec), rec.Executions)
	attempts += proxy.Attempts()

	// 3. A conditional write: not declared resendable.
	proxy = newDynamoDBProxy(db.URL, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer proxy.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "3. PutItem order o-2 if it does not exist (attribute_not_exists(id)), not declared resendable.")
	fmt.Fprintln(w, "   DynamoDB writes the item, then the proxy resets the connection.")
	_, err = newDynamoDBClient(proxy.URL, httpClient).PutItem(ctx, orderPut("o-2", 500, true))
	var rerr *retryhttp.Error
	if !errors.As(err, &rerr) {
		return fmt.Errorf("putting o-2: got %v, want the connection's error", err)
	}
	fmt.Fprintf(w, "   client: error after %d attempt: %s\n", rerr.Attempts, errText(rerr.Err))
	rec = proxy.Requests()[0]
	fmt.Fprintf(w, "   proxy: %s, executed by DynamoDB: %d\n", attempted(rec), rec.Executions)
	attempts += proxy.Attempts()

	// 4. What a resend of 3 would have met.
	proxy = newDynamoDBProxy(db.URL, retryhttptest.Pass())
	defer proxy.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "4. The same PutItem again, as a resend would have sent it.")
	_, err = newDynamoDBClient(proxy.URL, httpClient).PutItem(ctx, orderPut("o-2", 500, true))
	var condErr *types.ConditionalCheckFailedException
	if !errors.As(err, &condErr) {
		return fmt.Errorf("putting o-2 again: got %v, want ConditionalCheckFailedException", err)
	}
	fmt.Fprintf(w, "   client: %s: %s; the write had succeeded\n", condErr.ErrorCode(), condErr.ErrorMessage())
	attempts += proxy.Attempts()

	items, err := countItems(ctx, db.URL)
	if err != nil {
		return err
	}
	summary(w, 4, attempts, fmt.Sprintf("items in the table: %d", items))
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
	o := dynamoDBOptions(url, httpClient)
	o.Retryer = aws.NopRetryer{}
	return dynamodb.New(o)
}

// dynamoDBOptions are a DynamoDB client's options for the endpoint at url,
// with the SDK's own retryer.
func dynamoDBOptions(url string, httpClient *http.Client) dynamodb.Options {
	return dynamodb.Options{
		Region:       fakeRegion,
		Credentials:  fakeCredentials,
		BaseEndpoint: aws.String(url),
		HTTPClient:   httpClient,
	}
}

// newDynamoDBProxy puts the fault f in front of the DynamoDB at url. The
// attempts of one SDK call are one logical request: the SDK gives each call
// an invocation ID, which retryhttp, and the SDK's own retryer, send
// unchanged on every attempt.
func newDynamoDBProxy(url string, f retryhttptest.Fault) *retryhttptest.Proxy {
	return retryhttptest.NewProxy(url, f, retryhttptest.KeyHeader("Amz-Sdk-Invocation-Id"))
}

// provisionedMessage is the message DynamoDB sends with
// ProvisionedThroughputExceededException.
const provisionedMessage = "The level of configured provisioned throughput for the table was exceeded. " +
	"Consider increasing your provisioning level with the UpdateTable API."

// dynamoDBFault answers as DynamoDB answers an error, in place of the
// service: the status; Content-Type application/x-amz-json-1.0, a request
// ID and the CRC32 of the body, which the SDK checks; and the error's type,
// namespaced, only in the JSON body's __type. DynamoDB sends no error-code
// header.
func dynamoDBFault(status int, typ, message string) retryhttptest.Fault {
	body, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + typ, "message": message})
	return retryhttptest.Respond(status, http.Header{
		"Server":           {"Server"},
		"Content-Type":     {"application/x-amz-json-1.0"},
		"X-Amzn-Requestid": {dynamoDBRequestID(body)},
		"X-Amz-Crc32":      {strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)},
	}, string(body))
}

// dynamoDBRequestID makes a request ID of DynamoDB's form (52 upper-case
// letters and digits) from seed.
func dynamoDBRequestID(seed []byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	id := make([]byte, 52)
	h := crc32.ChecksumIEEE(seed)
	for i := range id {
		h = h*1664525 + 1013904223
		id[i] = alphabet[h>>24%uint32(len(alphabet))]
	}
	return string(id)
}

// createOrdersTable creates the table the examples use, keyed by the string
// attribute "id", in the DynamoDB at url.
func createOrdersTable(ctx context.Context, url string) error {
	_, err := dynamodb.New(dynamoDBOptions(url, http.DefaultClient)).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("creating table orders: %w", err)
	}
	return nil
}

// countItems counts the items of table orders in the DynamoDB at url.
func countItems(ctx context.Context, url string) (int32, error) {
	out, err := dynamodb.New(dynamoDBOptions(url, http.DefaultClient)).Scan(ctx, &dynamodb.ScanInput{
		TableName: aws.String("orders"), Select: types.SelectCount,
	})
	if err != nil {
		return 0, fmt.Errorf("counting items: %w", err)
	}
	return out.Count, nil
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
