package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/retryhttp/retryhttp/httptest"
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
	store, err := newS3Store("b")
	require.NoError(t, err)
	defer store.Close()
	object := pattern(objectSize)
	putChecksummedObject(t, store, "b", "big.bin", object)
	proxy := httptest.NewProxy(store.URL, httptest.First(1, httptest.Truncate(cutAt)))
	defer proxy.Close()

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

// uploadBlob stores body as photos/name in Azurite.
func uploadBlob(t *testing.T, url, name string, body []byte) {
	t.Helper()
	c, err := newBlobClient(url, http.DefaultClient, true)
	require.NoError(t, err)
	_, err = c.UploadBuffer(t.Context(), "photos", name, body, nil)
	require.NoError(t, err)
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
	url := azurite(t)
	blob := pattern(objectSize)
	uploadBlob(t, url, "cut-alone.bin", blob)
	proxy := httptest.NewProxy(url, httptest.First(1, httptest.Truncate(cutAt)))
	defer proxy.Close()
	c, err := azblob.NewClientWithSharedKeyCredential(proxy.URL+"/"+azureAccount, sharedKey(t), &azblob.ClientOptions{
		ClientOptions: policyOptions(&http.Client{Transport: &http.Transport{}}),
	})
	require.NoError(t, err)

	got, err := downloadBlob(t.Context(), c, "cut-alone.bin")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, blob[:cutAt], got)
	assert.Equal(t, 1, proxy.Attempts())
}
