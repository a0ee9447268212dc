#!/usr/bin/env bash
# The side-by-side benchmark (bench/fleetaudit-vs-conftest.sh) on the device
# machine, pinned to two cores with taskset. The machine has no Go, so
# prebuilt stripped binaries travel with the policy library, the conftest
# adapter, the fixture roots and the script, as one tarball in the ignored
# devbin/ directory (carried by the device tool):
#
#   B=/tmp/devb/bin T=/tmp/devb/tree; mkdir -p $B $T/bench/conftest $T/policies $T/testdata
#   GOBIN=$B go install -ldflags='-s -w' github.com/open-policy-agent/conftest@v0.71.1
#   for p in cmd/fleetaudit bench/gen bench/params bench/measure; do
#     CGO_ENABLED=0 go build -ldflags='-s -w' -o $B/$(basename $p) ./$p; done
#   cp -r policies/lib $T/policies/; cp -r testdata/hosts $T/testdata/
#   cp bench/conftest/adapter.rego $T/bench/conftest/; cp bench/fleetaudit-vs-conftest.sh $T/bench/
#   mkdir -p devbin && tar -C /tmp/devb -czf devbin/bench.tgz .
#
# An optional $B/fleetaudit-before (an earlier build) is measured beside.
set -euo pipefail
D=/tmp/devbench
mkdir -p "$D" && tar -C "$D" -xzf "${1:-devbin/bench.tgz}"
cd "$D/tree"
nproc; lscpu | grep -m1 'Model name' || true
export FLEETAUDIT=$D/bin/fleetaudit CONFTEST=$D/bin/conftest GEN=$D/bin/gen PARAMS=$D/bin/params MEASURE=$D/bin/measure CPUS=0,1
[ ! -x "$D/bin/fleetaudit-before" ] || export FLEETAUDIT_BEFORE=$D/bin/fleetaudit-before
bash bench/fleetaudit-vs-conftest.sh unique:10000 default:10000 default:100000
