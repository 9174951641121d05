#!/usr/bin/env bash
# CI for the redisbudget module (its own go.mod): installs redis-server when
# missing, then formatting, vet, the tests against real redis-server
# processes (a 3-node cluster among them), the fleet command's build, and a
# short benchmark run.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	echo "== installing redis-server"
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	$sudo apt-get update
	$sudo apt-get install -y redis-server
fi
redis-server --version

go version
go mod download

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:"
	echo "$unformatted"
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== tests"
go test -race ./...

echo "== fleet command"
go build -o /dev/null ./cmd/fleet

echo "== benchmarks, briefly"
go test -run='^$' -bench=. -benchtime=100x ./...
