package peers

import (
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnBaseKeepsTheLibrarysTLS checks that every library's own base
// trusts the roots it is given, speaks HTTP/2 when the server does, and
// keeps TLS sessions only where the library does (retryhttp).
func TestOwnBaseKeepsTheLibrarysTLS(t *testing.T) {
	roots := x509.NewCertPool()
	for _, lib := range WithBudgets() {
		t.Run(lib.Name, func(t *testing.T) {
			tr := OwnBase(lib.Name, roots)
			require.NotNil(t, tr)
			require.NotNil(t, tr.TLSClientConfig)
			assert.Same(t, roots, tr.TLSClientConfig.RootCAs)
			assert.True(t, tr.ForceAttemptHTTP2)
			assert.Equal(t, lib.Name == RetryHTTP, tr.TLSClientConfig.ClientSessionCache != nil, "session cache")
		})
	}
	assert.Nil(t, OwnBase("unknown", nil))
}
