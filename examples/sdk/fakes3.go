package main

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// fakeS3 is a small fake of S3's REST API with path-style addressing:
// PutObject and GetObject. Every request must carry a valid SigV4
// signature over the body that arrived, and X-Amz-Content-Sha256 must name
// that body's SHA-256, as S3 requires.
type fakeS3 struct {
	mux *http.ServeMux

	mu       sync.Mutex
	objects  map[string][]byte // by bucket and key
	puts     int               // PutObject calls that stored an object
	rejected int               // requests whose signature did not match
}

func newFakeS3() *fakeS3 {
	f := &fakeS3{mux: http.NewServeMux(), objects: make(map[string][]byte)}
	f.mux.HandleFunc("PUT /{bucket}/{key...}", f.putObject)
	f.mux.HandleFunc("GET /{bucket}/{key...}", f.getObject)
	return f
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

// Puts returns how many PutObject calls stored an object, and how many
// objects the fake holds.
func (f *fakeS3) Puts() (puts, objects int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts, len(f.objects)
}

// Rejected returns how many requests the fake rejected because their
// signature did not match them.
func (f *fakeS3) Rejected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rejected
}

// Object returns the stored object, or nil.
func (f *fakeS3) Object(bucket, key string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[bucket+"/"+key]
}

func (f *fakeS3) putObject(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if err := checkSigV4(r, body); err != nil {
		f.reject(w, err)
		return
	}
	if r.ContentLength != int64(len(body)) {
		writeS3Error(w, http.StatusBadRequest, "IncompleteBody", "The request body terminated unexpectedly.")
		return
	}
	f.mu.Lock()
	f.objects[r.PathValue("bucket")+"/"+r.PathValue("key")] = body
	f.puts++
	f.mu.Unlock()
	w.Header().Set("ETag", etag(body))
}

func (f *fakeS3) getObject(w http.ResponseWriter, r *http.Request) {
	if err := checkSigV4(r, nil); err != nil {
		f.reject(w, err)
		return
	}
	body := f.Object(r.PathValue("bucket"), r.PathValue("key"))
	if body == nil {
		writeS3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	w.Header().Set("ETag", etag(body))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

func (f *fakeS3) reject(w http.ResponseWriter, err error) {
	f.mu.Lock()
	f.rejected++
	f.mu.Unlock()
	writeS3Error(w, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
}

func etag(body []byte) string {
	sum := md5.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// s3Error returns the header and body of an S3 error response. As S3 does,
// it names the code only in the XML body.
func s3Error(code, message string) (http.Header, string) {
	b, _ := xml.Marshal(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: code, Message: message})
	return http.Header{"Content-Type": {"application/xml"}}, xml.Header + string(b)
}

func writeS3Error(w http.ResponseWriter, status int, code, message string) {
	h, body := s3Error(code, message)
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}
