package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// azurite returns the URL of the Azure Blob Storage the tests share:
// Azurite, with a container "photos" holding the blob "cat.jpg".
func azurite(t *testing.T) string {
	return sharedEmulator(t, "azurite", func(ctx context.Context, url string) error {
		c, err := newBlobClient(url, http.DefaultClient, true)
		if err != nil {
			return err
		}
		if _, err := c.CreateContainer(ctx, "photos", nil); err != nil {
			return err
		}
		_, err = c.UploadBuffer(ctx, "photos", "cat.jpg", pattern(4<<10), nil)
		return err
	}).URL
}

// azureError answers as Azure Storage answers an error: the status, the
// error's code in x-ms-error-code and in the XML body, the request ID and
// the service version; extra holds header pairs.
func azureError(status int, code, message string, extra ...string) retryhttptest.Fault {
	h := http.Header{
		"Content-Type":     {"application/xml"},
		"X-Ms-Error-Code":  {code},
		"X-Ms-Request-Id":  {"9a3c7f2e-801e-0041-6a1b-5e2f3b000000"},
		"X-Ms-Version":     {"2025-11-05"},
		"Server":           {"Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0"},
		"Content-Language": {"en-US"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	body := "\ufeff" + `<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code + `</Code><Message>` + message +
		"\nRequestId:9a3c7f2e-801e-0041-6a1b-5e2f3b000000\nTime:2026-11-24T10:00:00.0000000Z</Message></Error>"
	return retryhttptest.Respond(status, h, body)
}

var azureFailures = []llmFailure{
	{"503 ServerBusy", azureError(503, "ServerBusy", "The server is currently unable to receive requests. Please retry your request."), 0},
	{"503 ServerBusy, Retry-After: 1", azureError(503, "ServerBusy", "Ingress is over the account limit.", "Retry-After", "1"), time.Second},
	{"500 InternalError", azureError(500, "InternalError", "The server encountered an internal error. Please retry the request."), 0},
	{"500 OperationTimedOut", azureError(500, "OperationTimedOut", "The operation could not be completed within the permitted time."), 0},
	{"429, x-ms-retry-after-ms: 20", azureError(429, "TooManyRequests", "Too many requests.", "X-Ms-Retry-After-Ms", "20"), 20 * time.Millisecond},
	{"reset before the server read the request", retryhttptest.CloseBeforeRead(), 0},
	{"reset after the server read the request", retryhttptest.ResetAfterRead(), 0},
}

// TestAzureBlobSideBySide downloads and uploads a blob through each
// failure, put by the kit's proxy in front of Azurite, twice: with azcore's
// own retries over a plain transport (its delays cut to a millisecond), and
// with the recipe (azcore's retries off, retryhttp under it). The recipe
// must rescue every failure azcore rescues, and wait at least what the
// server asked.
func TestAzureBlobSideBySide(t *testing.T) {
	url := azurite(t)
	ops := []struct {
		name string
		do   func(ctx context.Context, c *azblob.Client) error
	}{
		{"DownloadStream", func(ctx context.Context, c *azblob.Client) error {
			resp, err := c.DownloadStream(ctx, "photos", "cat.jpg", nil)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err == nil && !bytes.Equal(b, pattern(4<<10)) {
				t.Error("downloaded bytes differ")
			}
			return err
		}},
		{"UploadBuffer", func(ctx context.Context, c *azblob.Client) error {
			_, err := c.UploadBuffer(ctx, "photos", "upload.bin", pattern(8<<10), nil)
			return err
		}},
	}
	for _, op := range ops {
		for _, f := range azureFailures {
			t.Run(op.name+"/"+f.name, func(t *testing.T) {
				own := retryhttptest.NewProxy(url, retryhttptest.First(1, f.fault))
				defer own.Close()
				c, err := azblob.NewClientWithSharedKeyCredential(own.URL+"/"+azureAccount, sharedKey(t), &azblob.ClientOptions{
					ClientOptions: policyOptions(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}),
				})
				require.NoError(t, err)
				ownErr := op.do(t.Context(), c)

				proxy := retryhttptest.NewProxy(url, retryhttptest.First(1, f.fault))
				defer proxy.Close()
				tr := retryhttp.New(fast...)
				defer tr.CloseIdleConnections()
				rc, err := newBlobClient(proxy.URL, &http.Client{Transport: tr}, false)
				require.NoError(t, err)
				err = op.do(t.Context(), rc)

				ownRec, rec := own.Requests()[0], proxy.Requests()[0]
				t.Logf("azcore's retries: %s, executed %d, error %v; recipe: %s, executed %d, error %v",
					attempted(ownRec), ownRec.Executions, ownErr, attempted(rec), rec.Executions, err)
				if ownErr == nil {
					require.NoError(t, err, "azcore's own retries rescue it, so the recipe must")
				}
				assert.True(t, rec.SameBody, "the same body on every attempt")
				if f.wait > 0 && rec.Attempts > 1 {
					assert.GreaterOrEqual(t, rec.Arrivals[1].Sub(rec.Arrivals[0]), f.wait, "waited what the server asked")
				}
			})
		}
	}
}

// TestAzureFinalErrorIntact checks that a final error reaches the SDK
// intact, after one attempt: Azurite's own answer for a blob that does
// not exist.
func TestAzureFinalErrorIntact(t *testing.T) {
	url := azurite(t)
	proxy := retryhttptest.NewProxy(url, retryhttptest.Pass())
	defer proxy.Close()
	tr := retryhttp.New(fast...)
	defer tr.CloseIdleConnections()
	c, err := newBlobClient(proxy.URL, &http.Client{Transport: tr}, false)
	require.NoError(t, err)
	_, err = c.DownloadStream(t.Context(), "photos", "dog.jpg", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "BlobNotFound")
	assert.Equal(t, 1, proxy.Attempts())
}

func sharedKey(t *testing.T) *azblob.SharedKeyCredential {
	cred, err := azblob.NewSharedKeyCredential(azureAccount, azureKey)
	require.NoError(t, err)
	return cred
}

// policyOptions are azcore's defaults, retries included, with the retry
// first delay cut to a millisecond so that the test takes no seconds;
// Retry-After and its kin still set the wait.
func policyOptions(hc *http.Client) policy.ClientOptions {
	return policy.ClientOptions{Transport: hc, Retry: policy.RetryOptions{RetryDelay: time.Millisecond}}
}
