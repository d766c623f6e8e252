#!/bin/sh
# Checks deploy/kubernetes/*.yaml against the Kubernetes API's Go types and
# the Prometheus Operator's (strict: an unknown field or a wrong type is an
# error), offline: the types come from the Go module cache, no schema is
# downloaded. A module of its own, so the product's go.mod stays lean.
set -eu
cd "$(dirname "$0")"
go vet ./...
go test ./...
go run . ../kubernetes/*.yaml
