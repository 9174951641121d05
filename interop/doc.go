// Package interop holds retryhttp's tests against servers that no one here
// wrote, run as their users run them: nginx serving a static file, started
// by the tests on a loopback port with a temporary configuration, behind
// the httptest kit's proxy, which cuts, resets and stalls response bodies
// on the way.
//
// It is a module of its own, so that `go test ./...` in the root module
// needs only Go. Its tests need nginx (Debian and Ubuntu: `apt-get install
// nginx-light`); they fail, never skip, without it. ci.sh installs it when
// missing and runs them.
package interop
