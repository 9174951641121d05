package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	nethttptest "net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// retries records the retries a Transport makes.
type retries struct {
	mu     sync.Mutex
	events []retryhttp.RetryEvent
}

func (r *retries) option() retryhttp.Option {
	return retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, e)
	})
}

// throttles returns, for each retry, whether it was paced as a throttle.
func (r *retries) throttles() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t []bool
	for _, e := range r.events {
		t = append(t, e.Verdict.Throttle)
	}
	return t
}

// TestS3PutObject counts, for uploads through each kind of failure, the
// attempts that reached the proxy in front of gofakes3 and the attempts S3
// executed, and checks that every attempt carried the same bytes under a
// signature the store accepted, and how each retry was paced.
func TestS3PutObject(t *testing.T) {
	const small, large = 64 << 10, 1536 << 10
	tests := []struct {
		name       string
		size       int
		opts       []retryhttp.Option
		fault      retryhttptest.Fault
		attempts   int
		executions int
		throttles  []bool // each retry's pacing
		wantErr    string // S3's error code; "" for success
	}{
		{name: "reset, then SlowDown", size: small, fault: retryhttptest.Sequence(retryhttptest.ResetAfterRead(), s3SlowDown()),
			attempts: 3, executions: 2, throttles: []bool{false, true}},
		{name: "503 without a body", size: small, fault: retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)),
			attempts: 2, executions: 1, throttles: []bool{true}},
		{name: "500 InternalError", size: small, fault: retryhttptest.First(1, s3Fault(http.StatusInternalServerError, "InternalError")),
			attempts: 2, executions: 1, throttles: []bool{false}},
		{name: "400 RequestTimeout", size: small, fault: retryhttptest.First(1, s3Fault(http.StatusBadRequest, "RequestTimeout")),
			attempts: 2, executions: 1, throttles: []bool{false}}, // its code is in the body only
		{name: "403 AccessDenied", size: small, fault: retryhttptest.First(1, s3Fault(http.StatusForbidden, "AccessDenied")),
			attempts: 1, executions: 0, wantErr: "AccessDenied"},
		{name: "over the buffer limit, SlowDown", size: large, fault: retryhttptest.First(1, s3SlowDown()),
			attempts: 1, executions: 0, wantErr: "SlowDown"},
		{name: "over the default limit, SlowDown, limit raised", size: large, opts: []retryhttp.Option{retryhttp.WithBodyBufferLimit(8 << 20)},
			fault: retryhttptest.First(1, s3SlowDown()), attempts: 2, executions: 1, throttles: []bool{true}},
		{name: "over the default limit, reset, limit raised", size: large, opts: []retryhttp.Option{retryhttp.WithBodyBufferLimit(8 << 20)},
			fault: retryhttptest.First(1, retryhttptest.ResetAfterRead()), attempts: 2, executions: 2, throttles: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := newS3Store("b")
			require.NoError(t, err)
			defer store.Close()
			var rec retries
			opts := append([]retryhttp.Option{
				retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
				rec.option(),
			}, tt.opts...)
			srv := retryhttptest.NewProxy(store.URL, tt.fault)
			defer srv.Close()
			tr := retryhttp.New(append(opts, fast...)...)
			defer tr.CloseIdleConnections()
			body := pattern(tt.size)

			_, err = newS3Client(srv.URL, &http.Client{Transport: tr}).PutObject(t.Context(), &s3.PutObjectInput{
				Bucket: aws.String("b"), Key: aws.String("k"), Body: bytes.NewReader(body),
			})

			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, body, store.Object("b", "k"), "the stored object")
			} else {
				var apiErr smithy.APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tt.wantErr, apiErr.ErrorCode())
			}
			require.Len(t, srv.Requests(), 1)
			r := srv.Requests()[0]
			assert.Equal(t, tt.attempts, r.Attempts, "attempts: %v", r.Outcomes)
			assert.Equal(t, tt.executions, r.Executions, "executions")
			assert.True(t, r.SameBody, "the same body on every attempt")
			assert.Zero(t, store.Rejected(), "requests with a signature that did not match")
			assert.Equal(t, tt.throttles, rec.throttles(), "throttle pacing of each retry")
		})
	}
}

func TestS3GetObject(t *testing.T) {
	store, err := newS3Store("b")
	require.NoError(t, err)
	defer store.Close()
	object := pattern(100 << 10)
	_, err = newS3Client(store.URL, http.DefaultClient).PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String("b"), Key: aws.String("k"), Body: bytes.NewReader(object),
	})
	require.NoError(t, err)
	for _, fault := range []retryhttptest.Fault{
		retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)),
		retryhttptest.First(1, s3SlowDown()),
		retryhttptest.First(1, s3Fault(http.StatusInternalServerError, "InternalError")),
		retryhttptest.First(1, retryhttptest.ResetAfterRead()),
		retryhttptest.First(1, retryhttptest.Truncate(1000)),
	} {
		srv := retryhttptest.NewProxy(store.URL, fault)
		tr := retryhttp.New(append([]retryhttp.Option{
			retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
		}, fast...)...)
		out, err := newS3Client(srv.URL, &http.Client{Transport: tr}).GetObject(t.Context(), &s3.GetObjectInput{
			Bucket: aws.String("b"), Key: aws.String("k"),
		})
		got, rerr := []byte(nil), error(nil)
		if err == nil {
			got, rerr = io.ReadAll(out.Body)
			out.Body.Close()
		}
		tr.CloseIdleConnections()
		srv.Close()
		r := srv.Requests()[0]
		// A body cut after its headers is resumed: the request for the
		// rest, Range and If-Range added, passes the store's check of the
		// SDK's signature, which does not cover them.
		require.NoError(t, err, r.Outcomes[0])
		require.NoError(t, rerr)
		assert.Equal(t, object, got, r.Outcomes[0])
		assert.Equal(t, 2, r.Attempts, r.Outcomes[0])
		assert.Zero(t, store.Rejected())
	}
}

// TestCheckSigV4 checks that the store's signature check catches a request
// whose body or signed headers changed after signing.
func TestCheckSigV4(t *testing.T) {
	body := []byte("the object")
	sign := func(body []byte) *http.Request {
		r, err := http.NewRequest(http.MethodPut, "http://s3.test/b/k?x-id=PutObject", nil)
		require.NoError(t, err)
		r.ContentLength = int64(len(body))
		sum := sha256.Sum256(body)
		r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		r.Header.Set("Amz-Sdk-Request", "attempt=1; max=1")
		creds := aws.Credentials{AccessKeyID: fakeAccessKeyID, SecretAccessKey: fakeSecretAccessKey}
		require.NoError(t, v4.NewSigner().SignHTTP(t.Context(), creds, r, hex.EncodeToString(sum[:]), "s3", fakeRegion, time.Now()))
		return r
	}
	require.NoError(t, checkSigV4(sign(body), body, time.Now()))

	err := checkSigV4(sign(body), []byte("the 0bject"), time.Now())
	require.ErrorContains(t, err, "X-Amz-Content-Sha256")

	r := sign(body)
	r.Header.Del("X-Amz-Content-Sha256") // as DynamoDB's requests have none
	require.ErrorContains(t, checkSigV4(r, []byte("the 0bject"), time.Now()), "signature does not match")

	r = sign(body)
	r.Header.Set("Amz-Sdk-Request", "attempt=2; max=3")
	require.ErrorContains(t, checkSigV4(r, body, time.Now()), "signature does not match")

	r = sign(body)
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), fakeAccessKeyID, "AKIDOTHER", 1))
	require.ErrorContains(t, checkSigV4(r, body, time.Now()), "unknown credential")

	// A payload left out of the signature, as S3 allows over HTTP and
	// HTTPS alike: any body passes.
	r, err = http.NewRequest(http.MethodPut, "http://s3.test/b/k", nil)
	require.NoError(t, err)
	r.ContentLength = int64(len("any body"))
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: fakeAccessKeyID, SecretAccessKey: fakeSecretAccessKey}
	require.NoError(t, v4.NewSigner().SignHTTP(t.Context(), creds, r, "UNSIGNED-PAYLOAD", "s3", fakeRegion, time.Now()))
	require.NoError(t, checkSigV4(r, []byte("any body"), time.Now()))
}

// TestAuthRefusalsAsS3Documents checks that each refusal of the store's
// check carries the status and error code that S3's error responses
// document for it.
func TestAuthRefusalsAsS3Documents(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: fakeAccessKeyID, SecretAccessKey: fakeSecretAccessKey}
	emptySHA256 := hex.EncodeToString(sha256.New().Sum(nil))
	signed := func(at time.Time, change func(r *http.Request)) *http.Request {
		r, err := http.NewRequest(http.MethodGet, "http://s3.test/b/k", nil)
		require.NoError(t, err)
		require.NoError(t, v4.NewSigner().SignHTTP(t.Context(), creds, r, emptySHA256, "s3", fakeRegion, at))
		change(r)
		return r
	}
	presigned := func(at time.Time, expires string, change func(q url.Values)) *http.Request {
		r, err := http.NewRequest(http.MethodGet, "http://s3.test/b/k?X-Amz-Expires="+expires, nil)
		require.NoError(t, err)
		u, _, err := v4.NewSigner().PresignHTTP(t.Context(), creds, r, "UNSIGNED-PAYLOAD", "s3", fakeRegion, at)
		require.NoError(t, err)
		r, err = http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		q := r.URL.Query()
		change(q)
		r.URL.RawQuery = q.Encode()
		return r
	}
	now, same := time.Now(), func(*http.Request) {}
	for _, tt := range []struct {
		name   string
		r      *http.Request
		body   string
		status int
		code   string
	}{
		{"anonymous", nethttptest.NewRequest(http.MethodGet, "http://s3.test/b/k", nil), "", http.StatusForbidden, "AccessDenied"},
		{"malformed Authorization", signed(now, func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 nothing") }), "",
			http.StatusBadRequest, "AuthorizationHeaderMalformed"},
		{"unknown access key", signed(now, func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), fakeAccessKeyID, "AKIDOTHER", 1))
		}), "", http.StatusForbidden, "InvalidAccessKeyId"},
		{"no X-Amz-Date", signed(now, func(r *http.Request) { r.Header.Del("X-Amz-Date") }), "", http.StatusForbidden, "AccessDenied"},
		{"signed 16 minutes ago", signed(now.Add(-16*time.Minute), same), "", http.StatusForbidden, "RequestTimeTooSkewed"},
		{"another body", signed(now, func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", emptySHA256) }), "x",
			http.StatusBadRequest, "XAmzContentSHA256Mismatch"},
		{"a signed header changed", signed(now, func(r *http.Request) {
			r.Header.Set("X-Amz-Date", now.Add(time.Second).UTC().Format("20060102T150405Z"))
		}), "",
			http.StatusForbidden, "SignatureDoesNotMatch"},
		{"presigned, expired", presigned(now.Add(-2*time.Hour), "3600", func(url.Values) {}), "", http.StatusForbidden, "AccessDenied"},
		{"presigned, no X-Amz-Expires", presigned(now, "60", func(q url.Values) { q.Del("X-Amz-Expires") }), "",
			http.StatusBadRequest, "AuthorizationQueryParametersError"},
		{"presigned, another key", presigned(now, "60", func(q url.Values) { q.Set("versionId", "2") }), "",
			http.StatusForbidden, "SignatureDoesNotMatch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ae *authError
			require.ErrorAs(t, checkSigV4(tt.r, []byte(tt.body), time.Now()), &ae)
			assert.Equal(t, tt.status, ae.status)
			assert.Equal(t, tt.code, ae.code)
		})
	}
}

// TestStoreRefusesAsS3 checks that the store answers a refusal as S3 does,
// and that the SDK reads it as it would S3's: the status, and the code
// from the body.
func TestStoreRefusesAsS3(t *testing.T) {
	store, err := newS3Store("b")
	require.NoError(t, err)
	defer store.Close()
	c := s3.New(s3.Options{
		Region: fakeRegion, BaseEndpoint: aws.String(store.URL), UsePathStyle: true, Retryer: aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: fakeAccessKeyID, SecretAccessKey: "not the secret"}, nil
		}),
	})
	_, err = c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: strings.NewReader("x")})
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "SignatureDoesNotMatch", apiErr.ErrorCode())
	var respErr *awshttp.ResponseError
	require.ErrorAs(t, err, &respErr)
	assert.Equal(t, http.StatusForbidden, respErr.HTTPStatusCode())

	resp, err := http.Get(store.URL + "/b/k") // anonymous
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), "<Code>AccessDenied</Code>")
	assert.Equal(t, 2, store.Rejected())
}

// s3Fault answers with an S3 error, its code in the body only.
func s3Fault(status int, code string) retryhttptest.Fault {
	h, body := s3Error(code, "An error occurred.")
	return retryhttptest.Respond(status, h, body)
}

// s3ErrorIn200 answers as S3 does when a copy fails after its 200 OK was
// sent: status 200, and an XML body whose root is an Error.
func s3ErrorIn200(code string) retryhttptest.Fault {
	h, body := s3Error(code, "We encountered an internal error. Please try again.")
	return retryhttptest.Respond(http.StatusOK, h, body)
}

// TestS3ErrorIn200SideBySide sends the same CopyObject, and a GetObject of
// an object that reads as an S3 error, through the SDK's own retryer over
// net/http and through the S3 recipe (the SDK's retries off, retryhttp with
// awsretry.Classifier), each against gofakes3 behind a proxy that answers
// the first attempt 200 OK with an <Error> body. The two must agree: a copy
// answered with a retryable error in a 200 is retried, its result then read
// as is; a 200 whose body is a result is not retried; an object's body,
// which streams, is never read as an error.
func TestS3ErrorIn200SideBySide(t *testing.T) {
	store, err := newS3Store("b")
	require.NoError(t, err)
	defer store.Close()
	source := pattern(4 << 10)
	h, errorDoc := s3Error("InternalError", "An object that reads as an error.")
	seed := newS3Client(store.URL, http.DefaultClient)
	for key, body := range map[string][]byte{"src": source, "error.xml": []byte(errorDoc)} {
		_, err = seed.PutObject(t.Context(), &s3.PutObjectInput{
			Bucket: aws.String("b"), Key: aws.String(key), Body: bytes.NewReader(body), ContentType: aws.String(h.Get("Content-Type")),
		})
		require.NoError(t, err)
	}

	clients := []struct {
		name   string
		client func(url string) (*s3.Client, func())
	}{
		{"SDK retryer", func(url string) (*s3.Client, func()) {
			tr := &http.Transport{}
			return s3.New(s3.Options{
				Region: fakeRegion, Credentials: fakeCredentials, BaseEndpoint: aws.String(url), UsePathStyle: true,
				HTTPClient: &http.Client{Transport: tr}, Retryer: sdkRetryer(),
			}), tr.CloseIdleConnections
		}},
		{"retryhttp", func(url string) (*s3.Client, func()) {
			tr := retryhttp.New(append([]retryhttp.Option{
				retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
			}, fast...)...)
			return newS3Client(url, &http.Client{Transport: tr}), tr.CloseIdleConnections
		}},
	}
	copies := []struct {
		name     string
		fault    retryhttptest.Fault
		attempts int
	}{
		{"200 InternalError", retryhttptest.First(1, s3ErrorIn200("InternalError")), 2},
		{"200 SlowDown", retryhttptest.First(1, s3ErrorIn200("SlowDown")), 2},
		{"200 result", retryhttptest.Pass(), 1},
	}
	for _, tt := range copies {
		t.Run("CopyObject "+tt.name, func(t *testing.T) {
			var etags []string
			for i, c := range clients {
				srv := retryhttptest.NewProxy(store.URL, tt.fault)
				client, closeIdle := c.client(srv.URL)
				key := fmt.Sprintf("copy-%d", i)
				out, err := client.CopyObject(t.Context(), &s3.CopyObjectInput{
					Bucket: aws.String("b"), Key: aws.String(key), CopySource: aws.String("b/src"),
				})
				closeIdle()
				srv.Close()
				require.NoError(t, err, c.name)
				require.NotNil(t, out.CopyObjectResult, c.name)
				etags = append(etags, aws.ToString(out.CopyObjectResult.ETag))
				r := srv.Requests()[0]
				assert.Equal(t, tt.attempts, r.Attempts, "%s: attempts: %v", c.name, r.Outcomes)
				assert.Equal(t, 1, r.Executions, "%s: copies made", c.name)
				assert.Equal(t, source, store.Object("b", key), c.name)
			}
			assert.Equal(t, etags[0], etags[1], "the result each client read")
			assert.NotEmpty(t, etags[0])
			assert.Zero(t, store.Rejected())
		})
	}
	t.Run("GetObject of an object that reads as an error", func(t *testing.T) {
		for _, c := range clients {
			srv := retryhttptest.NewProxy(store.URL, retryhttptest.Pass())
			client, closeIdle := c.client(srv.URL)
			out, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("error.xml")})
			require.NoError(t, err, c.name)
			got, err := io.ReadAll(out.Body)
			out.Body.Close()
			closeIdle()
			srv.Close()
			require.NoError(t, err, c.name)
			assert.Equal(t, errorDoc, string(got), c.name)
			assert.Equal(t, 1, srv.Requests()[0].Attempts, c.name)
		}
	})
}
