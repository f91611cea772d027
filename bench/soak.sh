#!/usr/bin/env bash
# The abuse soak of issue 11: builds dpproxy, starts it on loopback with
# the demo data, and runs bench/soak (half-open floods, oversized length
# headers, slow readers, huge results, failed logins), printing RSS, file
# descriptors and a control client's latency before, during and after
# each. About a minute; loopback only; bounded in count and time.
#
#   bash bench/soak.sh [--halfopen 1000] [--oversized 200] [--slow 10] [--huge 4] [--logins 8s]
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/dpproxy" ./cmd/dpproxy
go run ./bench/soak --dpproxy "$tmp/dpproxy" "$@"
