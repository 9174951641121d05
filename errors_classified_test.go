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

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorClassifier(t *testing.T) {
	retry := classify.Verdict{Decision: classify.Retry}
	timeout := classify.Verdict{Decision: classify.Retry, Timeout: true}
	final := classify.Verdict{Decision: classify.DontRetry}
	none := classify.Verdict{}
	tests := []struct {
		name string
		err  error
		want classify.Verdict
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
		{"attempt timeout", &conns.TimeoutError{Err: context.Canceled}, timeout},
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
			assert.Equal(t, tt.want, classify.Errors().Classify(req, nil, tt.err))
			wrapped := &url.Error{Op: "Get", URL: "http://x.test/", Err: tt.err}
			assert.Equal(t, tt.want, classify.Errors().Classify(req, nil, wrapped), "wrapped in *url.Error")
			want := tt.want
			if want.Decision == classify.Abstain {
				want.Decision = classify.DontRetry
			}
			assert.Equal(t, want, classify.Default().Classify(req, nil, tt.err), "default chain")
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
		want classify.Decision
	}{
		{"refused", "http://" + closedAddr + "/", classify.Retry},
		{"certificate not trusted", tlsSrv.URL, classify.DontRetry},
		{"TLS to a plain server", "https" + plainSrv.URL[len("http"):], classify.DontRetry},
		{"unsupported scheme", "ftp://" + closedAddr + "/", classify.DontRetry},
		{"connection reset", resetSrv.URL, classify.Retry},
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
			assert.Equal(t, tt.want, classify.Default().Classify(req, nil, err).Decision, "%v", err)
		})
	}
}
