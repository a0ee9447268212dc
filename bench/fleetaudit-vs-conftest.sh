#!/usr/bin/env bash
# Audit throughput, CPU and peak memory of fleetaudit and of conftest running
# the same Rego rules over the same snapshot files, side by side.
#
#   bench/fleetaudit-vs-conftest.sh [CASE...]
#
# A case is GENERATOR:HOSTS: unique:10000 is bench/gen -unique (every host
# differs in facts rules read), default:100000 the default generator (a few
# dozen configurations, as real fleets). Default cases: unique:10000
# default:10000 default:100000. conftest runs only up to CONFTEST_MAX hosts
# (default 10000): above, fleetaudit's figures are set against conftest's
# on the same generator at CONFTEST_MAX.
#
# Both run pinned to the CPUs in CPUS (default 0,1: two cores) with taskset
# when it is there. RUNS (default 1) repeats each measurement; the best wall
# time counts. Prebuilt binaries can be given (the device machine has no Go):
# FLEETAUDIT, CONFTEST, GEN, PARAMS, MEASURE, and POLICY_LIB (policies/lib),
# ADAPTER (bench/conftest/adapter.rego), ROOTS (testdata/hosts).
#
# FLEETAUDIT_BEFORE, when set, is another fleetaudit build measured beside
# (a before/after row) up to BEFORE_MAX hosts (default CONFTEST_MAX). KEEP (a directory) keeps the generated snapshots
# there instead of deleting each case's after it is measured.
#
# conftest evaluates package main's deny rules one file at a time, so it runs
# fleetaudit's host rules through bench/conftest/adapter.rego with the
# gpu-training parameters for every host; fleetaudit additionally selects
# rules per fleet, runs the fleet-wide skew rules and writes every finding
# with its evidence. Both read and decode every snapshot file.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(unique:10000 default:10000 default:100000)
CONFTEST_VERSION=v0.71.1
CONFTEST_MAX=${CONFTEST_MAX:-10000}
CPUS=${CPUS:-0,1}
RUNS=${RUNS:-1}
POLICY_LIB=${POLICY_LIB:-$here/policies/lib}
ADAPTER=${ADAPTER:-$here/bench/conftest/adapter.rego}
ROOTS=${ROOTS:-$here/testdata/hosts}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "${FLEETAUDIT:-}" ]; then
  (cd "$here" && go build -o "$work/fleetaudit" ./cmd/fleetaudit && go build -o "$work/gen" ./bench/gen &&
    go build -o "$work/params" ./bench/params && go build -o "$work/measure" ./bench/measure)
  FLEETAUDIT=$work/fleetaudit GEN=$work/gen PARAMS=$work/params MEASURE=$work/measure
fi
if [ -z "${CONFTEST:-}" ]; then
  CONFTEST=$here/bench/bin/conftest
  if [ ! -x "$CONFTEST" ]; then
    echo "installing conftest $CONFTEST_VERSION from the Go module proxy" >&2
    (cd "$here" && GOBIN="$here/bench/bin" GOFLAGS=-mod=mod go install "github.com/open-policy-agent/conftest@$CONFTEST_VERSION")
  fi
fi
pin=()
if command -v taskset >/dev/null && taskset -c "$CPUS" true 2>/dev/null; then
  pin=(taskset -c "$CPUS")
else
  echo "taskset unavailable or CPUS=$CPUS not allowed: running unpinned on $(nproc) CPUs" >&2
fi

"$PARAMS" gpu-training > "$work/params.json"
mkdir -p "$work/policy"
cp -r "$POLICY_LIB" "$work/policy/lib"
find "$work/policy" -name '*_test.rego' -delete
cp "$ADAPTER" "$work/policy/"

# measure NAME CMD...: the best of RUNS runs as "wall cpu rss_kib"; the
# tools exit 1 when they find hazards, which is not a failure here.
measure() {
  local name=$1 best="" line; shift
  for _ in $(seq "$RUNS"); do
    line=$("$MEASURE" -stdout "$work/$name.out" -- "${pin[@]}" "$@" 2>"$work/$name.err") ||
      { echo "measurement failed: $*" >&2; cat "$work/$name.err" >&2; exit 1; }
    read -r w c k code <<<"$line"
    if [ "$code" -gt 1 ]; then echo "$* exited $code" >&2; cat "$work/$name.err" >&2; exit 1; fi
    if [ -z "$best" ] || awk -v a="$w" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best="$w $c $k"; fi
  done
  echo "$best"
}

row() { # tool case hosts wall cpu rss_kib
  awk -v t="$1" -v c="$2" -v n="$3" -v w="$4" -v cpu="$5" -v k="$6" \
    'BEGIN { printf "%-10s %-8s %7d %9.2f %8.2f %9.0f %9.0f\n", t, c, n, w, cpu, n/w, k/1024 }'
}

declare -A ct_rate ct_cpu ct_rss
results=()
printf '%-10s %-8s %7s %9s %8s %9s %9s\n' tool fleet hosts "wall s" "CPU s" hosts/s "RSS MiB"
for c in "${cases[@]}"; do
  gen=${c%%:*} n=${c##*:}
  flags=()
  [ "$gen" = unique ] && flags=(-unique)
  snaps="$work/snaps-$gen-$n"
  [ -z "${KEEP:-}" ] || snaps="$KEEP/snaps-$gen-$n"
  "$GEN" -n "$n" "${flags[@]}" -roots "$ROOTS" -o "$snaps"
  read -r fw fc fk < <(measure "fa-$c" "$FLEETAUDIT" audit --snapshots "$snaps" --format json -o "$work/fa-$gen-$n.json" --fail-on none --log-level error)
  # Sanity: the rules really ran, and all of them finished (a rule past
  # --rule-timeout is an error in the report and its work is skipped).
  if ! grep -q '"rule": "hugetlb-cma-on-gpu"' "$work/fa-$gen-$n.json"; then
    echo "sanity check failed: no hugetlb-cma-on-gpu finding from fleetaudit ($c)" >&2; exit 1
  fi
  if grep -q 'did not finish within' "$work/fa-$gen-$n.json"; then
    echo "warning: a rule ran out of its time budget in fleetaudit ($c); the figures leave its work out" >&2
  fi
  row fleetaudit "$gen" "$n" "$fw" "$fc" "$fk"
  if [ -n "${FLEETAUDIT_BEFORE:-}" ] && [ "$n" -le "${BEFORE_MAX:-$CONFTEST_MAX}" ]; then
    read -r bw bc bk < <(measure "fb-$c" "$FLEETAUDIT_BEFORE" audit --snapshots "$snaps" --format json -o "$work/fb-$gen-$n.json" --fail-on none --log-level error)
    row before "$gen" "$n" "$bw" "$bc" "$bk"
    if cmp -s "$work/fa-$gen-$n.json" "$work/fb-$gen-$n.json"; then echo "           $c: findings JSON byte-identical to before"; else echo "           $c: findings JSON DIFFERS from before" >&2; fi
    rm -f "$work/fb-$gen-$n.json"
  fi
  if [ "$n" -le "$CONFTEST_MAX" ]; then
    read -r cw cc ck < <(measure "ct-$c" "$CONFTEST" test --policy "$work/policy" --data "$work/params.json" --namespace main --no-color --output json "$snaps")
    if ! grep -q hugetlb_cma_on_gpu "$work/ct-$c.out"; then
      echo "sanity check failed: no hugetlb_cma_on_gpu finding from conftest ($c)" >&2; exit 1
    fi
    row conftest "$gen" "$n" "$cw" "$cc" "$ck"
    ct_rate[$gen]=$(awk -v n="$n" -v w="$cw" 'BEGIN { print n/w }')
    ct_cpu[$gen]=$(awk -v n="$n" -v c="$cc" 'BEGIN { print c/n }')
    ct_rss[$gen]=$ck
    against="conftest $gen $n"
  else
    against="conftest $gen $CONFTEST_MAX"
  fi
  [ -n "${KEEP:-}" ] || rm -rf "$snaps"
  rm -f "$work/fa-$gen-$n.json"
  if [ -n "${ct_rate[$gen]:-}" ]; then
    results+=("$(awk -v c="$c" -v a="$against" -v n="$n" -v w="$fw" -v cpu="$fc" -v k="$fk" -v r="${ct_rate[$gen]}" -v pc="${ct_cpu[$gen]}" -v rk="${ct_rss[$gen]}" \
      'BEGIN { printf "%-16s fleetaudit %.1fx the hosts/s of %s, %.2fx its CPU per host, %.2fx its peak RSS", c, (n/w)/r, a, (cpu/n)/pc, k/rk }')")
  fi
done
echo
printf '%s\n' "${results[@]}"
