package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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

// An authError is a request that S3 refuses for its authentication, with
// the status, error code and message that S3's error responses document for
// that refusal, and, as its Error, what exactly was wrong, for the fake's
// own tests.
type authError struct {
	status        int
	code, message string
	detail        string
}

func (e *authError) Error() string { return e.detail }

// The refusals S3 documents for a request's authentication.
func accessDenied(message, detail string) error {
	return &authError{http.StatusForbidden, "AccessDenied", message, detail}
}

func malformedAuthorization(detail string) error {
	return &authError{http.StatusBadRequest, "AuthorizationHeaderMalformed", "The authorization header that you provided is not valid.", detail}
}

func malformedQueryAuthorization(detail string) error {
	return &authError{http.StatusBadRequest, "AuthorizationQueryParametersError",
		"Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.", detail}
}

func unknownAccessKey(credential string) error {
	return &authError{http.StatusForbidden, "InvalidAccessKeyId", "The AWS access key ID that you provided does not exist in our records.",
		fmt.Sprintf("unknown credential %q", credential)}
}

func signatureMismatch() error {
	return &authError{http.StatusForbidden, "SignatureDoesNotMatch",
		"The request signature we calculated does not match the signature you provided. Check your AWS secret access key and signing method.",
		"the request signature does not match the request"}
}

// maxSkew is how far a request's signing time may be from the server's
// clock, for a request signed in its Authorization header.
const maxSkew = 15 * time.Minute

// checkSigV4 verifies the Signature Version 4 of r, whose body is body, as
// an AWS service does: it signs a copy of r (the headers r says it signed,
// the SHA-256 of the body that arrived, r's own signing time) with the
// secret it shares with the client, and compares the two signatures. A
// request whose body changed on the way, or was resent with another body,
// fails. Where X-Amz-Content-Sha256 is sent (S3), it must name the body's
// hash as well, or be UNSIGNED-PAYLOAD. A request signed more than 15
// minutes from now, the server's time, fails as well. A refusal is an
// *authError; any other error is the fake's own failure.
func checkSigV4(r *http.Request, body []byte, now time.Time) error {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if r.URL.Query().Has("X-Amz-Signature") {
			return checkPresigned(r, now)
		}
		return accessDenied("Access Denied", "neither an Authorization header nor a presigned query")
	}
	cred, signed, ok := parseAuthorization(auth)
	if !ok {
		return malformedAuthorization("missing or malformed Authorization")
	}
	scope := strings.Split(cred, "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 {
		return malformedAuthorization(fmt.Sprintf("malformed credential %q", cred))
	}
	if scope[0] != fakeAccessKeyID {
		return unknownAccessKey(cred)
	}
	signingTime, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return accessDenied("AWS authentication requires a valid Date or x-amz-date header", "missing or malformed X-Amz-Date")
	}
	if skew := now.Sub(signingTime); skew > maxSkew || skew < -maxSkew {
		return &authError{http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the server's time is too large.",
			fmt.Sprintf("signed at %s, %s from now", signingTime, skew)}
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	switch h := r.Header.Get("X-Amz-Content-Sha256"); {
	case h == "UNSIGNED-PAYLOAD":
		payloadHash = h // the body is left out of the signature
	case h != "" && h != payloadHash:
		return &authError{http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.",
			fmt.Sprintf("X-Amz-Content-Sha256 %s does not match the body's SHA-256 %s", h, payloadHash)}
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
		return signatureMismatch()
	}
	return nil
}

// checkPresigned verifies a presigned request, whose Signature Version 4
// is in its query (X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date,
// X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Signature), as
// s3.PresignClient makes it: it presigns a copy of r's URL and signed
// headers with the shared secret at r's own signing time, the payload
// unsigned and the path escaped once, as for S3, and compares the
// signatures. A header the signature names that changed, or any change to
// the query, fails; a header it does not name may be added. A URL used
// after it expired (at now, the server's time) fails too.
func checkPresigned(r *http.Request, now time.Time) error {
	q := r.URL.Query()
	if q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" {
		return malformedQueryAuthorization(fmt.Sprintf("X-Amz-Algorithm %q", q.Get("X-Amz-Algorithm")))
	}
	scope := strings.Split(q.Get("X-Amz-Credential"), "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 {
		return malformedQueryAuthorization(fmt.Sprintf("malformed credential %q", q.Get("X-Amz-Credential")))
	}
	if scope[0] != fakeAccessKeyID {
		return unknownAccessKey(q.Get("X-Amz-Credential"))
	}
	signingTime, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return malformedQueryAuthorization("missing or malformed X-Amz-Date")
	}
	expires, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || expires < 1 || expires > 7*24*60*60 {
		return malformedQueryAuthorization(fmt.Sprintf("X-Amz-Expires %q", q.Get("X-Amz-Expires")))
	}
	if now.After(signingTime.Add(time.Duration(expires) * time.Second)) {
		return accessDenied("Request has expired", fmt.Sprintf("expired %s after %s", signingTime, time.Duration(expires)*time.Second))
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
		return signatureMismatch()
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
