package peers

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/hashicorp/go-cleanhttp"
	"github.com/retryhttp/retryhttp/base"
)

// OwnBase returns a new base transport of the kind the library called name
// uses when it is given none, built as that library builds it, or nil for
// a name it does not know: for retryhttp go-cleanhttp's pooled transport
// with 100 idle connections per host, dialling through base.NewDialer,
// with a TLS client session cache of 64 hosts; for go-retryablehttp
// go-cleanhttp's pooled transport as it is (GOMAXPROCS+1 idle connections
// per host); for the AWS SDK, either retry mode, its BuildableClient's
// (10, TLS 1.2 at least); for the others a clone of http.DefaultTransport
// (2). Only retryhttp's keeps TLS sessions. With roots, the TLS config trusts roots alone and is
// otherwise the library's own.
//
// retryhttp's is rebuilt here as its New builds it, since a Transport's own
// base cannot be given a certificate authority; a retryhttp Transport over
// it behaves as one over its own.
func OwnBase(name string, roots *x509.CertPool) *http.Transport {
	var tr *http.Transport
	switch name {
	case Plain, Naive, Failsafe, FailsafeBudget:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case RetryHTTP:
		tr = cleanhttp.DefaultPooledTransport()
		tr.MaxIdleConnsPerHost = 100
		tr.DialContext = base.NewDialer().DialContext
		tr.TLSClientConfig = &tls.Config{ClientSessionCache: tls.NewLRUClientSessionCache(0)}
	case RetryableHTTP:
		tr = cleanhttp.DefaultPooledTransport()
	case AWS, AWSAdaptive:
		tr = awshttp.NewBuildableClient().GetTransport()
	default:
		return nil
	}
	if roots != nil {
		cfg := &tls.Config{}
		if tr.TLSClientConfig != nil {
			cfg = tr.TLSClientConfig.Clone()
		}
		cfg.RootCAs = roots
		tr.TLSClientConfig = cfg
	}
	return tr
}
