#!/usr/bin/env bash
# The side-by-side benchmark on the device machine, pinned to two cores with
# taskset: prebuilt binaries (fleetaudit, conftest, bench/gen, bench/params,
# stripped) travel as devbin/bins.tgz because the machine has no Go:
#
#   GOBIN=/tmp/devb go install -ldflags='-s -w' github.com/open-policy-agent/conftest@v0.71.1
#   CGO_ENABLED=0 go build -ldflags='-s -w' -o /tmp/devb/fleetaudit ./cmd/fleetaudit
#   CGO_ENABLED=0 go build -o /tmp/devb/gen ./bench/gen
#   CGO_ENABLED=0 go build -o /tmp/devb/params ./bench/params
#   mkdir -p devbin && tar -C /tmp/devb -czf devbin/bins.tgz .
set -e
mkdir -p /tmp/db && tar -C /tmp/db -xzf devbin/bins.tgz
W=/tmp/w; mkdir -p $W/policy; cp -r policies/lib $W/policy/; find $W/policy -name '*_test.rego' -delete; cp bench/conftest/adapter.rego $W/policy/
/tmp/db/params gpu-training > $W/params.json
nproc; command -v taskset; test -x /usr/bin/time && echo have-time
for n in 1000 10000; do
  /tmp/db/gen -n $n -o $W/s$n
  for run in 1 2; do
    /usr/bin/time -f "fleetaudit $n run$run %e s %U+%S cpu %M KiB" taskset -c 0,1 /tmp/db/fleetaudit audit --snapshots $W/s$n --format json -o $W/fa$n.json --fail-on none --log-level error || true
    /usr/bin/time -f "conftest $n run$run %e s %U+%S cpu %M KiB" taskset -c 0,1 /tmp/db/conftest test --policy $W/policy --data $W/params.json --namespace main --no-color --output json $W/s$n/ > $W/ct$n.json || true
  done
  echo "hugetlb findings: fleetaudit $(grep -c '"rule": "hugetlb-cma-on-gpu"' $W/fa$n.json) conftest $(grep -c hugetlb_cma_on_gpu $W/ct$n.json)"
done 2>&1
