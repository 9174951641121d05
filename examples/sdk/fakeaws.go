package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The credentials the fakes of AWS services share with their clients.
const (
	fakeAccessKeyID     = "AKIDEXAMPLE"
	fakeSecretAccessKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	fakeRegion          = "eu-west-1"
)

// fakeCredentials provides the credentials the fakes accept.
var fakeCredentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: fakeAccessKeyID, SecretAccessKey: fakeSecretAccessKey, Source: "fake"}, nil
})

// checkSigV4 verifies the Signature Version 4 of r, whose body is body, as
// an AWS service does: it signs a copy of r (the headers r says it signed,
// the SHA-256 of the body that arrived, r's own signing time) with the
// secret it shares with the client, and compares the two signatures. A
// request whose body changed on the way, or was resent with another body,
// fails. Where X-Amz-Content-Sha256 is sent (S3), it must name the body's
// hash as well, or, over TLS, be UNSIGNED-PAYLOAD.
func checkSigV4(r *http.Request, body []byte) error {
	if r.Header.Get("Authorization") == "" && r.URL.Query().Has("X-Amz-Signature") {
		return checkPresigned(r)
	}
	auth := r.Header.Get("Authorization")
	cred, signed, ok := parseAuthorization(auth)
	if !ok {
		return errors.New("missing or malformed Authorization")
	}
	scope := strings.Split(cred, "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || scope[0] != fakeAccessKeyID {
		return fmt.Errorf("unknown credential %q", cred)
	}
	signingTime, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return errors.New("missing or malformed X-Amz-Date")
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	switch h := r.Header.Get("X-Amz-Content-Sha256"); {
	case h == "UNSIGNED-PAYLOAD" && r.TLS != nil:
		payloadHash = h // over TLS, S3 clients leave the body out of the signature
	case h != "" && h != payloadHash:
		return fmt.Errorf("X-Amz-Content-Sha256 %s does not match the body's SHA-256 %s", h, payloadHash)
	}

	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	again, err := http.NewRequest(r.Method, u.String(), nil)
	if err != nil {
		return err
	}
	again.ContentLength = int64(len(body))
	for _, name := range strings.Split(signed, ";") {
		if name != "host" && name != "content-length" {
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	creds := aws.Credentials{AccessKeyID: fakeAccessKeyID, SecretAccessKey: fakeSecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, payloadHash, scope[3], scope[2], signingTime); err != nil {
		return err
	}
	if got := again.Header.Get("Authorization"); got != auth {
		return errors.New("the request signature does not match the request")
	}
	return nil
}

// checkPresigned verifies a presigned request, whose Signature Version 4
// is in its query (X-Amz-Credential, X-Amz-Date, X-Amz-SignedHeaders,
// X-Amz-Signature), as s3.PresignClient makes it: it presigns a copy of
// r's URL and signed headers with the shared secret at r's own signing
// time, the payload unsigned and the path escaped once, as for S3, and
// compares the signatures. A header the signature names that changed, or
// any change to the query, fails; a header it does not name may be added.
func checkPresigned(r *http.Request) error {
	q := r.URL.Query()
	scope := strings.Split(q.Get("X-Amz-Credential"), "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || scope[0] != fakeAccessKeyID {
		return fmt.Errorf("unknown credential %q", q.Get("X-Amz-Credential"))
	}
	signingTime, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return errors.New("missing or malformed X-Amz-Date")
	}
	want := q.Get("X-Amz-Signature")
	q.Del("X-Amz-Signature")
	u := *r.URL
	u.Scheme, u.Host, u.RawQuery = "http", r.Host, q.Encode()
	again, err := http.NewRequest(r.Method, u.String(), nil)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(q.Get("X-Amz-SignedHeaders"), ";") {
		if name != "host" {
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	creds := aws.Credentials{AccessKeyID: fakeAccessKeyID, SecretAccessKey: fakeSecretAccessKey}
	signed, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, again, "UNSIGNED-PAYLOAD", scope[3], scope[2],
		signingTime, func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err != nil {
		return err
	}
	su, err := url.Parse(signed)
	if err != nil {
		return err
	}
	if su.Query().Get("X-Amz-Signature") != want {
		return errors.New("the request signature does not match the request")
	}
	return nil
}

// parseAuthorization splits a SigV4 Authorization header into its
// credential and its list of signed headers.
func parseAuthorization(auth string) (credential, signedHeaders string, ok bool) {
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "", false
	}
	for _, part := range strings.Split(rest, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "Credential":
			credential = value
		case "SignedHeaders":
			signedHeaders = value
		}
	}
	return credential, signedHeaders, credential != "" && signedHeaders != ""
}
