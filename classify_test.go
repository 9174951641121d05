package retryhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusClassifier(t *testing.T) {
	retry := Verdict{Decision: Retry}
	final := Verdict{Decision: DontRetry}
	tests := []struct {
		code   int
		header http.Header
		want   Verdict
	}{
		{200, nil, final},
		{201, nil, final},
		{304, nil, final},
		{400, nil, final},
		{401, nil, final},
		{404, nil, final},
		{409, nil, final},
		{422, nil, final},
		{408, nil, retry},
		{429, nil, Verdict{Decision: Retry, Throttle: true}},
		{500, nil, retry},
		{501, nil, final},
		{502, nil, retry},
		{503, nil, retry},
		{503, http.Header{"Retry-After": {"1"}}, Verdict{Decision: Retry, Throttle: true}},
		{504, nil, Verdict{Decision: Retry, Timeout: true}},
		{505, nil, final},
		{507, nil, retry},
		{511, nil, final},
		{599, nil, retry},
		{600, nil, final},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code, tt.header), func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.code, Header: tt.header}
			assert.Equal(t, tt.want, StatusClassifier().Classify(get(t, "http://x.test/"), resp, nil))
			assert.Equal(t, tt.want, DefaultClassifier().Classify(get(t, "http://x.test/"), resp, nil))
		})
	}
}

func TestErrorClassifierDeadlineOfTheCaller(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://x.test/", nil)
	require.NoError(t, err)
	final := Verdict{Decision: DontRetry}
	assert.Equal(t, final, ErrorClassifier().Classify(req, nil, context.DeadlineExceeded))
	assert.Equal(t, final, DefaultClassifier().Classify(req, nil, &url.Error{Op: "Get", URL: "http://x.test/", Err: context.DeadlineExceeded}))
}

func TestErrorClassifier(t *testing.T) {
	retry := Verdict{Decision: Retry}
	timeout := Verdict{Decision: Retry, Timeout: true}
	final := Verdict{Decision: DontRetry}
	none := Verdict{}
	tests := []struct {
		name string
		err  error
		want Verdict
	}{
		{"refused dial", dialRefused, retry},
		{"dial timeout", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, timeout},
		{"reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, retry},
		{"aborted", syscall.ECONNABORTED, retry},
		{"broken pipe", &net.OpError{Op: "write", Err: syscall.EPIPE}, retry},
		{"connection closed under the write", &net.OpError{Op: "readfrom", Err: &net.OpError{Op: "write", Err: net.ErrClosed}}, retry},
		{"EOF", io.EOF, retry},
		{"unexpected EOF", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), retry},
		{"read timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, timeout},
		{"attempt timeout", &attemptTimeoutError{err: context.Canceled}, timeout},
		{"refused stream", h2StreamError(t, wire.H2RefusedStream), retry},
		{"stream reset by the server", h2StreamError(t, wire.H2InternalError), retry},
		{"stream protocol error", h2StreamError(t, h2ProtocolError), none},
		// Text proves nothing: a server chooses what its errors say.
		{"refused stream in text", errors.New("stream error: stream ID 3; REFUSED_STREAM"), none},
		{"internal error in text", errors.New("stream error: stream ID 1; INTERNAL_ERROR; received from peer"), none},
		{"HTTP/1 status line naming a code", errors.New(`net/http: malformed HTTP status code "REFUSED_STREAM"`), none},
		{"temporary DNS", &net.DNSError{Err: "server misbehaving", IsTemporary: true}, retry},
		{"DNS timeout", &net.DNSError{Err: "i/o timeout", IsTimeout: true}, timeout},
		{"NXDOMAIN", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", IsNotFound: true}}, final},
		{"other DNS", &net.DNSError{Err: "odd"}, final},
		{"unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, final},
		{"hostname", x509.HostnameError{Host: "x"}, final},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, final},
		{"TLS to plain server", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, final},
		{"TLS alert", tls.AlertError(40), final},
		{"canceled", context.Canceled, final},
		{"a base's deadline, the caller's context alive", context.DeadlineExceeded, timeout},
		{"unknown", errors.New("net/http: invalid header field name"), none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := get(t, "http://x.test/")
			assert.Equal(t, tt.want, ErrorClassifier().Classify(req, nil, tt.err))
			wrapped := &url.Error{Op: "Get", URL: "http://x.test/", Err: tt.err}
			assert.Equal(t, tt.want, ErrorClassifier().Classify(req, nil, wrapped), "wrapped in *url.Error")
			want := tt.want
			if want.Decision == NoOpinion {
				want.Decision = DontRetry
			}
			assert.Equal(t, want, DefaultClassifier().Classify(req, nil, tt.err), "default chain")
		})
	}
}

// TestRealErrorsClassified classifies errors produced by a real transport
// against real loopback listeners, not hand-made values.
func TestRealErrorsClassified(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plainSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := ln.Addr().String()
	ln.Close()
	resetSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0) // close with RST
			conn.Close()
		}
	}))
	defer resetSrv.Close()

	tests := []struct {
		name string
		url  string
		want Decision
	}{
		{"refused", "http://" + closedAddr + "/", Retry},
		{"certificate not trusted", tlsSrv.URL, DontRetry},
		{"TLS to a plain server", "https" + plainSrv.URL[len("http"):], DontRetry},
		{"unsupported scheme", "ftp://" + closedAddr + "/", DontRetry},
		{"connection reset", resetSrv.URL, Retry},
	}
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := get(t, tt.url)
			resp, err := base.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, DefaultClassifier().Classify(req, nil, err).Decision, "%v", err)
		})
	}
}

func TestContextClassifier(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	req := get(t, "http://x.test/").WithContext(ctx)
	resp := &http.Response{StatusCode: 503}
	assert.Equal(t, Verdict{}, ContextClassifier().Classify(req, resp, nil))
	cancel()
	assert.Equal(t, Verdict{Decision: DontRetry}, ContextClassifier().Classify(req, resp, nil))
	assert.Equal(t, DontRetry, DefaultClassifier().Classify(req, resp, nil).Decision, "a cancelled caller's 503 is final")
}

func TestChainAndStatuses(t *testing.T) {
	c := Chain{Statuses(DontRetry, 500), Statuses(Retry, 404, 429), DefaultClassifier()}
	req := get(t, "http://x.test/")
	for code, want := range map[int]Verdict{
		500: {Decision: DontRetry},
		404: {Decision: Retry},
		429: {Decision: Retry, Throttle: true},
		502: {Decision: Retry},
		400: {Decision: DontRetry},
	} {
		assert.Equal(t, want, c.Classify(req, &http.Response{StatusCode: code}, nil), "status %d", code)
	}
	assert.Equal(t, Verdict{Decision: DontRetry}, Chain{}.Classify(req, &http.Response{StatusCode: 503}, nil), "empty chain: final")
	fn := ClassifierFunc(func(*http.Request, *http.Response, error) Verdict { return Verdict{Decision: Retry} })
	assert.Equal(t, Retry, fn.Classify(req, nil, errors.New("x")).Decision)
	assert.Equal(t, "retry", Retry.String())
	assert.Equal(t, "don't retry", DontRetry.String())
	assert.Equal(t, "no opinion", NoOpinion.String())
	assert.Equal(t, "Decision(9)", Decision(9).String())
}
