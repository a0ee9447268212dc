#!/usr/bin/env bash
# Audit throughput and peak memory of fleetaudit and of conftest running the
# same Rego rules over the same snapshot files, side by side.
#
#   bench/fleetaudit-vs-conftest.sh [SIZES...]      (default: 1000 10000)
#
# conftest evaluates package main's deny rules one file at a time, so it runs
# fleetaudit's host rules through bench/conftest/adapter.rego with the
# gpu-training parameters for every host; fleetaudit additionally selects
# rules per fleet and runs the fleet-wide skew rules. Both read and decode
# every snapshot file.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000)
CONFTEST_VERSION=v0.71.1

if [ ! -x /usr/bin/time ]; then
  apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
if [ ! -x bench/bin/conftest ]; then
  echo "installing conftest $CONFTEST_VERSION from the Go module proxy" >&2
  GOBIN="$PWD/bench/bin" GOFLAGS=-mod=mod go install "github.com/open-policy-agent/conftest@$CONFTEST_VERSION"
fi
go build -o bin/fleetaudit ./cmd/fleetaudit

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go run ./bench/params gpu-training > "$work/params.json"
mkdir -p "$work/policy"
cp -r policies/lib "$work/policy/"
find "$work/policy" -name '*_test.rego' -delete
cp bench/conftest/adapter.rego "$work/policy/"

# measure LABEL CMD...: prints "seconds peak_rss_kib"; the tools exit 1 when
# they find hazards, which is not a failure here.
measure() {
  local out="$work/time.$1"; shift
  /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>"$work/stderr" || true
  # GNU time puts "Command exited with non-zero status" before the figures.
  if ! grep -E '^[0-9.]+ [0-9]+$' "$out"; then
    echo "measurement failed: $*" >&2; cat "$work/stderr" >&2; exit 1
  fi
}

printf '%-10s %7s %9s %9s %12s\n' tool hosts seconds hosts/s "peak RSS MiB"
for n in "${sizes[@]}"; do
  snaps="$work/snaps-$n"
  go run ./bench/gen -n "$n" -o "$snaps"
  read -r fa_s fa_kb < <(measure fleetaudit-$n bin/fleetaudit audit --snapshots "$snaps" --format json -o "$work/fa-$n.json" --fail-on none --log-level error)
  read -r ct_s ct_kb < <(measure conftest-$n bench/bin/conftest test --policy "$work/policy" --data "$work/params.json" --namespace main --no-color --output json "$snaps"/*.json)
  # Sanity: both really evaluated the rules.
  fa_hugetlb=$(grep -c '"rule": "hugetlb-cma-on-gpu"' "$work/fa-$n.json" || true)
  ct_hugetlb=$( (bench/bin/conftest test --policy "$work/policy" --data "$work/params.json" --namespace main --no-color --output json "$snaps"/gpu-0000*.json || true) | grep -c 'hugetlb_cma_on_gpu' || true)
  if [ "$fa_hugetlb" -eq 0 ] || [ "$ct_hugetlb" -eq 0 ]; then
    echo "sanity check failed: fleetaudit $fa_hugetlb, conftest $ct_hugetlb hugetlb-cma-on-gpu findings" >&2; exit 1
  fi
  awk -v n="$n" -v s="$fa_s" -v kb="$fa_kb" 'BEGIN { printf "%-10s %7d %9.2f %9.0f %12.0f\n", "fleetaudit", n, s, n/s, kb/1024 }'
  awk -v n="$n" -v s="$ct_s" -v kb="$ct_kb" 'BEGIN { printf "%-10s %7d %9.2f %9.0f %12.0f\n", "conftest", n, s, n/s, kb/1024 }'
  awk -v a="$fa_s" -v b="$ct_s" -v ma="$fa_kb" -v mb="$ct_kb" -v n="$n" 'BEGIN { printf "ratio      %7d  fleetaudit is %.1fx faster, uses %.2fx the memory\n", n, b/a, ma/mb }'
done
