package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"log"
	"net/http"
	nethttptest "net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// s3Store is an S3 that no one here wrote: gofakes3, in memory, on a
// loopback server. gofakes3 does not check request signatures, so a check
// in front of it does, as S3 does: every request must carry a valid SigV4
// signature over the body that arrived, and X-Amz-Content-Sha256 must name
// that body's SHA-256 (or be UNSIGNED-PAYLOAD). A request that fails the
// check is answered with the status, error code and message S3 documents
// for that refusal.
type s3Store struct {
	*nethttptest.Server
	backend *s3mem.Backend

	// ahead is how far the store's clock, by which it checks signing
	// times, runs ahead of the real one.
	ahead atomic.Int64

	mu       sync.Mutex
	rejected int           // requests refused for their authentication
	gets     []rangeHeader // the range headers of each GET, in order
}

// A rangeHeader is what a GET asked for of an object's bytes.
type rangeHeader struct{ Range, IfRange string }

// newS3Store starts an S3 with the given buckets.
func newS3Store(buckets ...string) (*s3Store, error) {
	s := &s3Store{backend: s3mem.New()}
	for _, b := range buckets {
		if err := s.backend.CreateBucket(b); err != nil {
			return nil, err
		}
	}
	s3 := gofakes3.New(s.backend).Server()
	s.Server = nethttptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if r.Method == http.MethodGet {
			s.mu.Lock()
			s.gets = append(s.gets, rangeHeader{r.Header.Get("Range"), r.Header.Get("If-Range")})
			s.mu.Unlock()
		}
		if err := checkSigV4(r, body, time.Now().Add(time.Duration(s.ahead.Load()))); err != nil {
			s.mu.Lock()
			s.rejected++
			s.mu.Unlock()
			var ae *authError
			if !errors.As(err, &ae) {
				ae = &authError{status: http.StatusInternalServerError, code: "InternalError", message: "We encountered an internal error. Please try again."}
			}
			writeS3Error(w, ae.status, ae.code, ae.message)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s3.ServeHTTP(w, r)
	}))
	// gofakes3 answers a download its client cut short (as the tests cut
	// them) with an error status after the body began, which net/http logs
	// as a superfluous WriteHeader: the log would be noise.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	return s, nil
}

// Advance moves the store's clock d ahead, as if d had passed since the
// requests it will check were signed.
func (s *s3Store) Advance(d time.Duration) {
	s.ahead.Add(int64(d))
}

// Rejected returns how many requests were refused for their
// authentication.
func (s *s3Store) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// Gets returns the Range and If-Range headers of each GET that reached
// the store, in order of arrival.
func (s *s3Store) Gets() []rangeHeader {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]rangeHeader(nil), s.gets...)
}

// Object returns the stored object, or nil.
func (s *s3Store) Object(bucket, key string) []byte {
	obj, err := s.backend.GetObject(bucket, key, nil)
	if err != nil {
		return nil
	}
	defer obj.Contents.Close()
	b, _ := io.ReadAll(obj.Contents)
	return b
}

// s3Error returns the header and body of an S3 error response, as S3 sends
// them (restXml without an error wrapper): the code only in the XML body,
// with a request ID and host ID in headers and body.
func s3Error(code, message string) (http.Header, string) {
	const requestID, hostID = "4442587FB7D0A2F9", "jYXmUPkTjwfFs2rD1T/7x6bW+1qoU6kXK9b8tKq5Lgk="
	b, _ := xml.Marshal(struct {
		XMLName   xml.Name `xml:"Error"`
		Code      string
		Message   string
		RequestID string `xml:"RequestId"`
		HostID    string `xml:"HostId"`
	}{Code: code, Message: message, RequestID: requestID, HostID: hostID})
	return http.Header{
		"Content-Type":     {"application/xml"},
		"X-Amz-Request-Id": {requestID},
		"X-Amz-Id-2":       {hostID},
		"Server":           {"AmazonS3"},
	}, xml.Header + string(b)
}

func writeS3Error(w http.ResponseWriter, status int, code, message string) {
	h, body := s3Error(code, message)
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}
