package main

import (
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// Azurite's, and the Azure Storage emulators', well-known development
// account.
const (
	azureAccount = "devstoreaccount1"
	azureKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// newBlobClient returns an Azure Blob Storage client for the blob service
// at url (Azurite's, path-style, so the account is the first path segment)
// that sends through httpClient. With ownRetries false, azcore's retry
// policy is off (MaxRetries -1) and retrying is httpClient's, retryhttp's
// in the recipe. azcore retries 408, 429, 500, 502, 503 and 504 and reads
// Retry-After, retry-after-ms and x-ms-retry-after-ms; retryhttp's default
// chain retries the same statuses (and every other 5xx but 501, 505 and
// 511), and reads the same headers. Azure Storage names its errors in
// x-ms-error-code (ServerBusy, OperationTimedOut, InternalError), always
// with those statuses, so no classifier of its own is needed.
//
// Blob calls are GET, HEAD, PUT and DELETE, resent by their method. One
// PUT is not safe to resend: AppendBlock appends again; give it an
// append-position condition (AppendPositionAccessConditions), which makes
// a resend fail instead of appending twice.
func newBlobClient(url string, httpClient *http.Client, ownRetries bool) (*azblob.Client, error) {
	cred, err := azblob.NewSharedKeyCredential(azureAccount, azureKey)
	if err != nil {
		return nil, err
	}
	opts := azcore.ClientOptions{Transport: httpClient}
	if !ownRetries {
		opts.Retry = policy.RetryOptions{MaxRetries: -1}
	}
	return azblob.NewClientWithSharedKeyCredential(url+"/"+azureAccount, cred, &azblob.ClientOptions{ClientOptions: opts})
}

// newBlobClientSAS returns a client of one blob, container/name in the
// blob service at url, that authenticates with a SAS URL: a signature in
// the query, read-only, for an hour. Here the SAS is signed with the
// development account's key; in production it comes from whoever holds
// the key or a user delegation key. Unlike Shared Key, a SAS covers no
// header, so retryhttp may ask for the rest of a cut download with a Range
// header: the recipe for downloads that resume. azcore's retries are off.
func newBlobClientSAS(url, container, name string, httpClient *http.Client) (*blob.Client, error) {
	cred, err := azblob.NewSharedKeyCredential(azureAccount, azureKey)
	if err != nil {
		return nil, err
	}
	blobURL := url + "/" + azureAccount + "/" + container + "/" + name
	signer, err := blob.NewClientWithSharedKeyCredential(blobURL, cred, nil)
	if err != nil {
		return nil, err
	}
	sasURL, err := signer.GetSASURL(sas.BlobPermissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		return nil, err
	}
	return blob.NewClientWithNoCredential(sasURL, &blob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: httpClient, Retry: policy.RetryOptions{MaxRetries: -1},
	}})
}
