#!/bin/sh
# Checks deploy/kubernetes/*.yaml and the Helm chart deploy/helm/rdmatrace
# (linted, and rendered: its tests compare it with deploy/kubernetes)
# against the Kubernetes API's Go types and the Prometheus Operator's
# (strict: an unknown field or a wrong type is an error), offline: the
# types and Helm's packages come from the Go module cache, no schema and no
# helm binary is downloaded. A module of its own, so the product's go.mod
# stays lean.
# GO names the go command (default: go).
set -eu
GO=${GO:-go}
cd "$(dirname "$0")"
"$GO" vet ./...
"$GO" test -count=1 ./...
"$GO" run . -chart ../helm/rdmatrace ../kubernetes/*.yaml
