#!/usr/bin/env bash
# The side-by-side benchmark (bench/fleetaudit-vs-conftest.sh) on the device
# machine, pinned to two cores with taskset, then 1,000,000 default-generator
# hosts (table and JSON report) while BUDGET seconds last. The machine has no
# Go, so prebuilt stripped binaries travel with the policy library, the
# conftest adapter, the fixture roots and the script, as one tarball in the
# ignored devbin/ directory (carried by the device tool):
#
#   B=/tmp/devb/bin T=/tmp/devb/tree; mkdir -p $B $T/bench/conftest $T/policies $T/testdata
#   GOBIN=$B go install -ldflags='-s -w' github.com/open-policy-agent/conftest@v0.71.1
#   for p in cmd/fleetaudit bench/gen bench/params bench/measure; do
#     CGO_ENABLED=0 go build -ldflags='-s -w' -o $B/$(basename $p) ./$p; done
#   cp -r policies/lib $T/policies/; cp -r testdata/hosts $T/testdata/
#   cp bench/conftest/adapter.rego $T/bench/conftest/; cp bench/fleetaudit-vs-conftest.sh $T/bench/
#   mkdir -p devbin && tar -C /tmp/devb -cf - bin tree | xz -T2 -6 > devbin/bench.txz
#
# An optional $B/fleetaudit-before (an earlier build) is measured beside.
# Results go to $OUT (the device tool brings them back), or /tmp/devbench-out.
set -euo pipefail
OUT=${OUT:-/tmp/devbench-out}; mkdir -p "$OUT"
D=/tmp/devbench; mkdir -p "$D"; tar -C "$D" -xJf "${1:-devbin/bench.txz}"
cd "$D/tree"; nproc; lscpu | grep -m1 'Model name' || true
export FLEETAUDIT=$D/bin/fleetaudit CONFTEST=$D/bin/conftest GEN=$D/bin/gen PARAMS=$D/bin/params MEASURE=$D/bin/measure CPUS=0,1
[ ! -x "$D/bin/fleetaudit-before" ] || export FLEETAUDIT_BEFORE=$D/bin/fleetaudit-before
RUNS=${RUNS_UNIQUE:-2} bash bench/fleetaudit-vs-conftest.sh unique:10000 2>&1 | tee "$OUT/unique.txt"
RUNS=1 BEFORE_MAX=100000 bash bench/fleetaudit-vs-conftest.sh default:10000 default:100000 2>&1 | tee "$OUT/default.txt"
left=$((${BUDGET:-560} - SECONDS))
[ "$left" -gt 120 ] || { echo "no time left for 1,000,000 hosts ($left s)"; exit 0; }
G=/dev/shm/million
timeout $((left - 60)) "$D/bin/gen" -n 1000000 -roots testdata/hosts -o $G || { echo "1,000,000 hosts: generation did not finish"; exit 0; }
for f in table json; do
  left=$((${BUDGET:-560} - SECONDS)); [ "$left" -gt 40 ] || break
  echo -n "1M $f (wall cpu rss_kib exit): " | tee -a "$OUT/million.txt"
  timeout "$left" "$D/bin/measure" -stdout /dev/null -- taskset -c 0,1 "$D/bin/fleetaudit" audit --snapshots $G \
    --format $f -o /tmp/million.$f --fail-on none --log-level error | tee -a "$OUT/million.txt"
  rm -f /tmp/million.$f
done
