#!/usr/bin/env bash
# Collect a real node with a prebuilt bin/fleetaudit, as root and as an
# unprivileged user, and record what the node's own tools say about the same
# facts. Everything lands in $OUT (default ./out).
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
bin=$(readlink -f bin/fleetaudit)
/usr/bin/time -v "$bin" collect -o "$OUT/root.json" --limits-domain root 2> "$OUT/root.stderr"
echo "root exit: $?"
chmod 755 "$(dirname "$bin")" "$bin"
if command -v setpriv >/dev/null; then
  tmp=$(mktemp -d); chmod 777 "$tmp"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" collect -o "$tmp/nobody.json" 2> "$OUT/nobody.stderr"
  echo "nobody exit: $?"
  cp "$tmp/nobody.json" "$OUT/nobody.json"
fi
bash "$(dirname "$0")/node-facts.sh"
tail -n 3 "$OUT/root.stderr" "$OUT/nobody.stderr"
grep -E "Elapsed|Maximum resident" "$OUT/root.stderr"
