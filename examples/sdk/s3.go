package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// runS3 makes five calls through the AWS SDK's S3 client and retryhttp to
// gofakes3, an implementation of S3, each behind a proxy that misbehaves in
// one way, and writes to w what the client saw, each retry, and what the
// proxy counted.
// opts are added to the Transports'.
//
// S3's object calls are PUT, GET and DELETE, which retryhttp resends by
// their method. Two things need care:
//
//   - The SDK hands net/http an upload's body without GetBody, so retryhttp
//     buffers it to send it again, up to WithBodyBufferLimit (1 MiB by
//     default); a longer body is sent once and never resent. A client for
//     larger uploads raises the limit, and holds up to that much memory per
//     upload in flight.
//   - S3 answers SlowDown (reduce your request rate) with a 503 whose code
//     is only in the body; awsretry.Classifier paces a 503 without a code as
//     a throttle, so S3 gets a throttle's longer waits.
//
// Each resend is the same request, byte for byte: the signature the SDK
// made for the first attempt is still valid (SigV4 signatures hold for 15
// minutes), and the store checks it against the body that arrived.
//
// A download whose body is cut after its headers is resumed: retryhttp
// asks for the rest with Range and If-Range (the object's ETag), headers
// the SDK did not sign, so the signature still holds, and splices the 206
// onto what the caller read; the SDK's checksum validation, over every byte
// the caller reads, passes. A GetObject with a Range of its own is not
// resumed: the SDK signs that Range, so a request for the rest would fail
// S3's check, and the caller's read ends in a *resume.Error
// (resume.SignedRange) after the bytes that arrived.
func runS3(w io.Writer, opts ...retryhttp.Option) error {
	classifier := retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default()))
	tr := retryhttp.New(append([]retryhttp.Option{classifier, printRetries(w)}, opts...)...)
	defer tr.CloseIdleConnections()
	httpClient := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx := context.Background()

	store, err := newS3Store("photos", "videos")
	if err != nil {
		return err
	}
	defer store.Close()
	var attempts int
	fmt.Fprintln(w, "aws-sdk-go-v2 S3 (Retryer: aws.NopRetryer{}) over retryhttp, against gofakes3 behind a faulty proxy.")

	// 1. An upload through a reset and a SlowDown.
	photo := pattern(64 << 10)
	srv := retryhttptest.NewProxy(store.URL, retryhttptest.Sequence(retryhttptest.ResetAfterRead(), s3SlowDown()))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "1. PutObject photos/cat.jpg, %d KiB from a bytes.Reader.\n", len(photo)>>10)
	fmt.Fprintln(w, "   S3 stores it and the proxy resets the connection; then the proxy answers 503 SlowDown.")
	_, err = newS3Client(srv.URL, httpClient).PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("photos"), Key: aws.String("cat.jpg"), Body: bytes.NewReader(photo),
	})
	if err != nil {
		return fmt.Errorf("putting cat.jpg: %w", err)
	}
	fmt.Fprintln(w, "   client: done")
	rec := srv.Requests()[0]
	fmt.Fprintf(w, "   proxy: %s, executed by S3: %d, the same body each time: %t\n", attempted(rec), rec.Executions, rec.SameBody)
	fmt.Fprintf(w, "   S3: signatures rejected: %d, the object is the upload: %t\n",
		store.Rejected(), bytes.Equal(store.Object("photos", "cat.jpg"), photo))
	attempts += srv.Attempts()

	// 2. A download through a 503.
	srv = retryhttptest.NewProxy(store.URL, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "2. GetObject photos/cat.jpg.")
	fmt.Fprintln(w, "   The proxy answers 503 without a body, as a load balancer may.")
	out, err := newS3Client(srv.URL, httpClient).GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String("photos"), Key: aws.String("cat.jpg"),
	})
	if err != nil {
		return fmt.Errorf("getting cat.jpg: %w", err)
	}
	body, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil {
		return fmt.Errorf("reading cat.jpg: %w", err)
	}
	fmt.Fprintf(w, "   client: got %d KiB, the same bytes: %t\n", len(body)>>10, bytes.Equal(body, photo))
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   proxy: %s, executed by S3: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	// 3. An upload longer than the buffer limit.
	video := pattern(1536 << 10)
	srv = retryhttptest.NewProxy(store.URL, retryhttptest.First(1, s3SlowDown()))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "3. PutObject videos/cat.mp4, %d KiB: more than the 1 MiB retryhttp buffers by default.\n", len(video)>>10)
	fmt.Fprintln(w, "   The proxy answers 503 SlowDown, its code only in the XML body.")
	_, err = newS3Client(srv.URL, httpClient).PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("videos"), Key: aws.String("cat.mp4"), Body: bytes.NewReader(video),
	})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("putting cat.mp4: got %v, want S3's error", err)
	}
	fmt.Fprintf(w, "   client: error %s: %s\n", apiErr.ErrorCode(), apiErr.ErrorMessage())
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   proxy: %s, executed by S3: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	// 4. The same upload through a Transport that buffers more.
	big := retryhttp.New(append([]retryhttp.Option{classifier, retryhttp.WithBodyBufferLimit(8 << 20), printRetries(w)}, opts...)...)
	defer big.CloseIdleConnections()
	srv = retryhttptest.NewProxy(store.URL, retryhttptest.First(1, s3SlowDown()))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "4. The same PutObject with a CRC32 checksum, through a Transport with WithBodyBufferLimit(8 << 20).")
	fmt.Fprintln(w, "   The proxy answers 503 SlowDown, its code only in the XML body.")
	_, err = newS3Client(srv.URL, &http.Client{Transport: big, Timeout: 10 * time.Second}).PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("videos"), Key: aws.String("cat.mp4"), Body: bytes.NewReader(video),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return fmt.Errorf("putting cat.mp4 again: %w", err)
	}
	fmt.Fprintln(w, "   client: done")
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   proxy: %s, executed by S3: %d, the same body each time: %t\n", attempted(rec), rec.Executions, rec.SameBody)
	attempts += srv.Attempts()

	// 5. A download whose body is cut.
	srv = retryhttptest.NewProxy(store.URL, retryhttptest.First(1, retryhttptest.CloseAfter(512<<10)))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "5. GetObject videos/cat.mp4, with the SDK's checksum validation on (ChecksumMode ENABLED).")
	fmt.Fprintln(w, "   The proxy closes the connection after 512 KiB of the body.")
	out, err = newS3Client(srv.URL, httpClient).GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String("videos"), Key: aws.String("cat.mp4"), ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return fmt.Errorf("getting cat.mp4: %w", err)
	}
	body, err = io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil {
		return fmt.Errorf("reading cat.mp4: %w", err)
	}
	fmt.Fprintf(w, "   client: got %d KiB, the same bytes: %t, the SDK validated its CRC32 %s\n",
		len(body)>>10, bytes.Equal(body, video), aws.ToString(out.ChecksumCRC32))
	rec = srv.Requests()[0]
	gets := store.Gets()
	rest := gets[len(gets)-1]
	fmt.Fprintf(w, "   proxy: %s; the second with Range: %s, If-Range: the ETag: %t\n",
		attempted(rec), rest.Range, rest.IfRange == aws.ToString(out.ETag))
	attempts += srv.Attempts()

	summary(w, 5, attempts, fmt.Sprintf("signatures rejected: %d, each object the bytes uploaded: %t", store.Rejected(),
		bytes.Equal(store.Object("photos", "cat.jpg"), photo) && bytes.Equal(store.Object("videos", "cat.mp4"), video)))
	return nil
}

// newS3Client returns an S3 client that sends its requests through
// httpClient to the endpoint at url, with path-style addressing, and leaves
// retrying to httpClient.
func newS3Client(url string, httpClient *http.Client) *s3.Client {
	return s3.New(s3.Options{
		Region:       fakeRegion,
		Credentials:  fakeCredentials,
		BaseEndpoint: aws.String(url),
		UsePathStyle: true,
		HTTPClient:   httpClient,
		Retryer:      aws.NopRetryer{},
	})
}

// s3SlowDown answers as S3 does when asked to slow down: a 503 whose code,
// SlowDown, is only in the body, and no Retry-After.
func s3SlowDown() retryhttptest.Fault {
	h, body := s3Error("SlowDown", "Please reduce your request rate.")
	return retryhttptest.Respond(http.StatusServiceUnavailable, h, body)
}

// pattern returns n bytes that differ from one position to the next, so
// that a body cut or shifted on the way does not match.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}
