#!/usr/bin/env bash
# CI for the otelretry module (its own go.mod): formatting, vet, the tests
# with the race detector, the demonstration built and run, and a short
# benchmark run so that the benchmarks keep compiling and running. Runs from
# any directory.
set -euo pipefail
cd "$(dirname "$0")"

go version
go mod download

echo "== otelretry: gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:"
	echo "$unformatted"
	exit 1
fi

echo "== otelretry: go vet"
go vet ./...

echo "== otelretry: tests"
go test -race ./...

echo "== otelretry: the demonstration"
go build -o /dev/null ./cmd/otel
# The summary only: the stdout exporters' JSON that follows is long.
go run ./cmd/otel | sed -n '1,/^The same spans and metrics/p'

echo "== otelretry: benchmarks, briefly"
go test -run='^$' -bench=. -benchtime=100x ./...
