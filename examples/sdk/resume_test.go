package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net/http"
	nethttptest "net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The downloads of these tests: an object of objectSize bytes whose body
// the proxy cuts after cutAt bytes, far into it, as a connection lost
// during a large download is.
const (
	objectSize = 4 << 20
	cutAt      = 1 << 20
)

// readAll reads r to its end, returning what it read and the error that
// ended it (nil at io.EOF).
func readAll(r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	_, err := io.Copy(&buf, r)
	return buf.Bytes(), err
}

// putChecksummedObject stores body as bucket/key through the SDK, with a
// CRC32 checksum, which gofakes3 keeps and sends back with the object, as
// S3 does: GetObject then validates the body it reads against it.
func putChecksummedObject(t *testing.T, store *s3Store, bucket, key string, body []byte) {
	t.Helper()
	_, err := newS3Client(store.URL, http.DefaultClient).PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	require.NoError(t, err)
}

// objectBehindProxy starts gofakes3 with the object b/big.bin, objectSize
// bytes stored with a CRC32 checksum, and the kit's proxy in front of it,
// whose attempts get fault; both stop with the test.
func objectBehindProxy(t *testing.T, fault retryhttptest.Fault) (*s3Store, []byte, *retryhttptest.Proxy) {
	store, err := newS3Store("b")
	require.NoError(t, err)
	t.Cleanup(store.Close)
	object := pattern(objectSize)
	putChecksummedObject(t, store, "b", "big.bin", object)
	proxy := retryhttptest.NewProxy(store.URL, fault)
	t.Cleanup(proxy.Close)
	return store, object, proxy
}

// newS3ClientOwnRetries returns an S3 client with the SDK's own retries (its
// standard retryer, delays of a millisecond) over a plain transport: the
// SDK alone.
func newS3ClientOwnRetries(url string) *s3.Client {
	return s3.New(s3.Options{
		Region: fakeRegion, Credentials: fakeCredentials, BaseEndpoint: aws.String(url), UsePathStyle: true,
		HTTPClient: &http.Client{Transport: &http.Transport{}}, Retryer: sdkRetryer(),
	})
}

// getObject downloads bucket/key through c with the SDK's checksum
// validation on, and reads the body to its end.
func getObject(ctx context.Context, c *s3.Client, bucket, key string) (*s3.GetObjectOutput, []byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	got, err := readAll(out.Body)
	return out, got, err
}

// TestS3GetObjectCutWithoutRetryhttp shows what the recipe rescues: the
// SDK with its own retries reads an object whose body is cut after 1 MiB
// only up to the cut, and then fails. The SDK retries a call until its
// response arrives; the body it hands its caller is the caller's problem.
func TestS3GetObjectCutWithoutRetryhttp(t *testing.T) {
	store, object, proxy := objectBehindProxy(t, retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)))

	out, got, err := getObject(t.Context(), newS3ClientOwnRetries(proxy.URL), "b", "big.bin")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, object[:cutAt], got)
	assert.NotEmpty(t, aws.ToString(out.ChecksumCRC32), "the checksum the SDK would validate")
	assert.Equal(t, 1, proxy.Attempts())
	assert.Equal(t, []rangeHeader{{}}, store.Gets())
}

// TestS3ChecksumValidated checks that GetObject validates the body it reads
// against the checksum gofakes3 sends, so that a splice that shifted or
// dropped a byte could not pass: an object stored with another checksum
// fails the read at its end.
func TestS3ChecksumValidated(t *testing.T) {
	store, err := newS3Store("b")
	require.NoError(t, err)
	defer store.Close()
	object := pattern(64 << 10)
	wrong := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(object)+1)
	_, err = store.backend.PutObject("b", "k", map[string]string{
		"X-Amz-Checksum-Crc32": base64.StdEncoding.EncodeToString(wrong),
	}, bytes.NewReader(object), int64(len(object)), nil)
	require.NoError(t, err)

	_, got, err := getObject(t.Context(), newS3Client(store.URL, http.DefaultClient), "b", "k")
	require.ErrorContains(t, err, "checksum did not match")
	assert.Equal(t, object, got, "every byte, then the error")
}

// uploadBlob stores objectSize bytes as photos/name in Azurite, and
// returns them.
func uploadBlob(t *testing.T, url, name string) []byte {
	t.Helper()
	c, err := newBlobClient(url, http.DefaultClient, true)
	require.NoError(t, err)
	body := pattern(objectSize)
	_, err = c.UploadBuffer(t.Context(), "photos", name, body, nil)
	require.NoError(t, err)
	return body
}

// blobBehindProxy uploads the blob photos/name to Azurite, and starts the
// kit's proxy in front of Azurite, whose attempts get fault, stopped with
// the test.
func blobBehindProxy(t *testing.T, name string, fault retryhttptest.Fault) ([]byte, *retryhttptest.Proxy) {
	url := azurite(t)
	blob := uploadBlob(t, url, name)
	proxy := retryhttptest.NewProxy(url, fault)
	t.Cleanup(proxy.Close)
	return blob, proxy
}

// downloadBlob downloads photos/name through c and reads the body to its
// end.
func downloadBlob(ctx context.Context, c *azblob.Client, name string) ([]byte, error) {
	resp, err := c.DownloadStream(ctx, "photos", name, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAll(resp.Body)
}

// TestAzureDownloadCutWithoutRetryhttp is TestS3GetObjectCutWithoutRetryhttp
// for azblob against Azurite: with azcore's own retries, a blob whose body
// is cut after 1 MiB is read up to the cut, then the read fails. (azblob's
// DownloadStreamResponse.NewRetryReader resumes, if the caller asks for
// it.)
func TestAzureDownloadCutWithoutRetryhttp(t *testing.T) {
	blob, proxy := blobBehindProxy(t, "cut-alone.bin", retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)))
	c, err := azblob.NewClientWithSharedKeyCredential(proxy.URL+"/"+azureAccount, sharedKey(t), &azblob.ClientOptions{
		ClientOptions: policyOptions(&http.Client{Transport: &http.Transport{}}),
	})
	require.NoError(t, err)

	got, err := downloadBlob(t.Context(), c, "cut-alone.bin")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, blob[:cutAt], got)
	assert.Equal(t, 1, proxy.Attempts())
}

// A rangeRecorder is a base transport that records the Range and If-Range
// of each request retryhttp sends through it.
type rangeRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	sent []rangeHeader
}

func (r *rangeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.sent = append(r.sent, rangeHeader{req.Header.Get("Range"), req.Header.Get("If-Range")})
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

func (r *rangeRecorder) requests() []rangeHeader {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rangeHeader(nil), r.sent...)
}

func (r *rangeRecorder) CloseIdleConnections() {
	if c, ok := r.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// cutFaults are the failures of a download's body the recipes rescue: the
// connection closed or reset 1 MiB in, or both, one after the other.
var cutFaults = []struct {
	name  string
	fault retryhttptest.Fault
	cuts  int
}{
	{"closed", retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)), 1},
	{"reset", retryhttptest.First(1, retryhttptest.ResetAfter(cutAt)), 1},
	{"closed, then reset", retryhttptest.Sequence(retryhttptest.CloseAfter(cutAt), retryhttptest.ResetAfter(cutAt)), 2},
}

// s3Recipe returns the S3 recipe's transport: retryhttp with
// awsretry.Classifier, its delays cut short, closed with the test.
func s3Recipe(t *testing.T) *retryhttp.Transport {
	tr := retryhttp.New(append([]retryhttp.Option{
		retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
	}, fast...)...)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// TestS3GetObjectResumesCutBody downloads a 4 MiB object through the S3
// recipe while the proxy cuts its body: the SDK's caller reads every byte,
// and the SDK's own checksum validation (CRC32, over the whole body read)
// passes over the splice. Each cut costs one more GET, for the rest: its
// Range and If-Range are not signed, the SDK having signed a request
// without them, and S3 checks the headers it signed (gofakes3 ignores
// If-Range; retryhttp checks that the 206 carries the same ETag).
func TestS3GetObjectResumesCutBody(t *testing.T) {
	for _, tt := range cutFaults {
		t.Run(tt.name, func(t *testing.T) {
			store, object, proxy := objectBehindProxy(t, tt.fault)

			out, got, err := getObject(t.Context(), newS3Client(proxy.URL, &http.Client{Transport: s3Recipe(t)}), "b", "big.bin")
			require.NoError(t, err, "read whole, and the checksum validated")
			require.True(t, bytes.Equal(object, got), "the object, byte for byte")
			assert.NotEmpty(t, aws.ToString(out.ChecksumCRC32))
			assert.Equal(t, tt.cuts+1, proxy.Attempts())
			gets := store.Gets()
			require.Len(t, gets, tt.cuts+1)
			assert.Equal(t, rangeHeader{}, gets[0])
			etag := aws.ToString(out.ETag)
			for _, g := range gets[1:] {
				assert.Regexp(t, `^bytes=\d+-$`, g.Range)
				assert.Equal(t, etag, g.IfRange, "pinned to the object's ETag")
			}
			if tt.cuts == 1 && tt.name == "closed" {
				assert.Equal(t, "bytes=1048576-", gets[1].Range)
			}
			assert.Zero(t, store.Rejected(), "every request's signature held")
		})
	}
}

// TestS3GetObjectSignedRangeNotResumed asks GetObject for a range of the
// object: the SDK signs the Range header, so a request for the rest of the
// range would fail S3's signature check. retryhttp sees the signed Range
// in the Authorization header (SignedHeaders) and does not send it: the
// caller's read ends in a *resume.Error (resume.SignedRange) after the bytes
// of the range that arrived, every one of them right.
func TestS3GetObjectSignedRangeNotResumed(t *testing.T) {
	store, object, proxy := objectBehindProxy(t, retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)))

	out, err := newS3Client(proxy.URL, &http.Client{Transport: s3Recipe(t)}).GetObject(t.Context(), &s3.GetObjectInput{
		Bucket: aws.String("b"), Key: aws.String("big.bin"), Range: aws.String("bytes=4096-"),
	})
	require.NoError(t, err)
	defer out.Body.Close()
	got, err := readAll(out.Body)
	var re *resume.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, resume.SignedRange, re.Reason)
	assert.Zero(t, re.Resumes)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, object[4096:4096+cutAt], got)
	assert.Equal(t, 1, proxy.Attempts())
	assert.Zero(t, store.Rejected(), "no request for the rest was sent to fail")
}

// TestS3ResumeWithinSignatureWindow cuts a GetObject's body after the
// store's clock has moved on: S3 takes a request's SigV4 signature for 15
// minutes after its X-Amz-Date, and the request for the rest carries the
// SDK's signature, made when the call began. Within the window the rest is
// fetched and the read is whole; after it S3 answers 403
// RequestTimeTooSkewed, and the read ends in resume.Refused after the bytes
// that arrived, every one right.
func TestS3ResumeWithinSignatureWindow(t *testing.T) {
	for _, tt := range []struct {
		later  time.Duration
		whole  bool
		reject int
	}{
		{14 * time.Minute, true, 0},
		{16 * time.Minute, false, 1},
	} {
		t.Run(tt.later.String(), func(t *testing.T) {
			store, object, proxy := objectBehindProxy(t, retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)))
			out, err := newS3Client(proxy.URL, &http.Client{Transport: s3Recipe(t)}).GetObject(t.Context(),
				&s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("big.bin")})
			require.NoError(t, err)
			defer out.Body.Close()
			store.Advance(tt.later)
			got, err := readAll(out.Body)
			assert.Equal(t, 2, proxy.Attempts(), "one request for the rest")
			assert.Equal(t, tt.reject, store.Rejected())
			if tt.whole {
				require.NoError(t, err)
				assert.True(t, bytes.Equal(object, got), "the object, byte for byte")
				return
			}
			var re *resume.Error
			require.ErrorAs(t, err, &re)
			assert.Equal(t, resume.Refused, re.Reason)
			assert.Equal(t, http.StatusForbidden, re.StatusCode)
			assert.True(t, bytes.Equal(object[:cutAt], got), "the bytes before the cut, and no other")
		})
	}
}

// azureRecipe returns the Azure recipe's transport over a rangeRecorder,
// its delays cut short, closed with the test.
func azureRecipe(t *testing.T) (*http.Client, *rangeRecorder) {
	rec := &rangeRecorder{base: &http.Transport{}}
	tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(rec)}, fast...)...)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, rec
}

// TestAzureSharedKeyNotResumed downloads a blob through the recipe with a
// Shared Key credential while the proxy cuts its body. Shared Key signs
// the Range header, empty or not (Azurite, as Azure Storage, answers a
// request with another Range 403 AuthorizationFailure), so retryhttp does
// not ask for the rest: the read ends in a *resume.Error
// (resume.SignedRange) after the bytes that arrived, every one right.
func TestAzureSharedKeyNotResumed(t *testing.T) {
	blob, proxy := blobBehindProxy(t, "sharedkey.bin", retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)))
	hc, rec := azureRecipe(t)
	c, err := newBlobClient(proxy.URL, hc, false)
	require.NoError(t, err)

	got, err := downloadBlob(t.Context(), c, "sharedkey.bin")
	var re *resume.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, resume.SignedRange, re.Reason)
	assert.Equal(t, blob[:cutAt], got)
	assert.Equal(t, 1, proxy.Attempts())
	assert.Equal(t, []rangeHeader{{}}, rec.requests())
}

// TestAzureSASResumesCutBody downloads the blob through the recipe with a
// SAS URL in place of the Shared Key: the signature is in the query and
// covers no header, so the request for the rest may carry a Range.
// retryhttp asks for it with If-Range on the blob's ETag (Azurite ignores
// If-Range; retryhttp checks that the 206 carries the same ETag), and the
// caller reads every byte.
func TestAzureSASResumesCutBody(t *testing.T) {
	url := azurite(t)
	blob := uploadBlob(t, url, "sas.bin")
	for _, tt := range cutFaults {
		t.Run(tt.name, func(t *testing.T) {
			proxy := retryhttptest.NewProxy(url, tt.fault)
			defer proxy.Close()
			hc, rec := azureRecipe(t)
			c, err := newBlobClientSAS(proxy.URL, "photos", "sas.bin", hc)
			require.NoError(t, err)

			resp, err := c.DownloadStream(t.Context(), nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			got, err := readAll(resp.Body)
			require.NoError(t, err)
			require.True(t, bytes.Equal(blob, got), "the blob, byte for byte")
			assert.Equal(t, tt.cuts+1, proxy.Attempts())
			sent := rec.requests()
			require.Len(t, sent, tt.cuts+1)
			assert.Equal(t, rangeHeader{}, sent[0])
			for _, s := range sent[1:] {
				assert.Regexp(t, `^bytes=\d+-$`, s.Range)
				assert.Equal(t, string(*resp.ETag), s.IfRange)
			}
		})
	}
}

// TestS3PresignedRangeResumes downloads a range of the object through a
// presigned URL (s3.PresignClient), whose signature is in the query and
// covers only the Host, with the Range header added by the caller after
// signing: the recipe for a ranged download that resumes. The proxy cuts
// the body; retryhttp asks for the rest of the caller's range, which the
// signature does not cover, and the caller reads the range whole. A URL
// presigned with the Range in it (X-Amz-SignedHeaders names range) is not
// resumed: resume.SignedRange.
func TestS3PresignedRangeResumes(t *testing.T) {
	const from = 4096
	t.Run("Range added after signing", func(t *testing.T) {
		store, object, proxy := objectBehindProxy(t, retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)))
		url := presignGetObject(t, proxy.URL, nil)
		resp, got, err := getRange(t, url, from)
		require.NoError(t, err)
		assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.True(t, bytes.Equal(object[from:], got), "the range, byte for byte")
		assert.Equal(t, []rangeHeader{
			{Range: "bytes=4096-"},
			{Range: "bytes=" + strconv.Itoa(from+cutAt) + "-" + strconv.Itoa(objectSize-1), IfRange: resp.Header.Get("ETag")},
		}, store.Gets(), "the caller's range, then the rest of it, to the range's last byte")
		assert.Zero(t, store.Rejected(), "the presigned signature held for both")
	})
	t.Run("Range signed", func(t *testing.T) {
		store, object, proxy := objectBehindProxy(t, retryhttptest.First(1, retryhttptest.CloseAfter(cutAt)))
		url := presignGetObject(t, proxy.URL, aws.String("bytes=4096-"))
		_, got, err := getRange(t, url, from)
		var re *resume.Error
		require.ErrorAs(t, err, &re)
		assert.Equal(t, resume.SignedRange, re.Reason)
		assert.Equal(t, object[from:from+cutAt], got)
		assert.Len(t, store.Gets(), 1)
		assert.Zero(t, store.Rejected())
	})
}

// presignGetObject presigns a GetObject of b/big.bin at url for an hour,
// with the Range rng in the signature when it is not nil.
func presignGetObject(t *testing.T, url string, rng *string) string {
	t.Helper()
	p, err := s3.NewPresignClient(newS3Client(url, http.DefaultClient), s3.WithPresignExpires(time.Hour)).PresignGetObject(t.Context(),
		&s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("big.bin"), Range: rng})
	require.NoError(t, err)
	return p.URL
}

// getRange GETs url with Range: bytes=from- through the S3 recipe, and
// reads the body to its end.
func getRange(t *testing.T, url string, from int) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Range", "bytes="+strconv.Itoa(from)+"-")
	resp, err := s3Recipe(t).RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := readAll(resp.Body)
	return resp, got, err
}

// TestCheckPresigned checks that the store's signature check accepts a
// presigned request as signed, with a header added that the signature does
// not name, and rejects one whose query or signed header changed.
func TestCheckPresigned(t *testing.T) {
	for _, tt := range []struct {
		name   string
		rng    *string
		change func(r *http.Request)
		ok     bool
	}{
		{"as signed", nil, func(*http.Request) {}, true},
		{"an unsigned Range added", nil, func(r *http.Request) { r.Header.Set("Range", "bytes=10-") }, true},
		{"another key", nil, func(r *http.Request) { r.URL.Path = "/b/other.bin" }, false},
		{"a query parameter added", nil, func(r *http.Request) { r.URL.RawQuery += "&versionId=2" }, false},
		{"the signed Range changed", aws.String("bytes=0-"), func(r *http.Request) { r.Header.Set("Range", "bytes=10-") }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := nethttptest.NewRequest(http.MethodGet, presignGetObject(t, "http://s3.test", tt.rng), nil)
			if tt.rng != nil {
				r.Header.Set("Range", *tt.rng)
			}
			tt.change(r)
			err := checkSigV4(r, nil, time.Now())
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "signature does not match")
			}
		})
	}
}
