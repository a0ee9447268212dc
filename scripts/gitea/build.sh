#!/usr/bin/env bash
# Builds Gitea (the forge remediate's end-to-end test publishes to) from the Go
# module proxy alone, into a cache outside the repository:
#   $GITEA_CACHE/bin/gitea   the server (pure-Go sqlite, no cgo, as Gitea's Makefile builds by default)
#   $GITEA_CACHE/share/      templates, options and public: without the bindata tag
#                            Gitea reads them from STATIC_ROOT_PATH at run time
#   $GITEA_CACHE/VERSION     what was built; a cache with another version is rebuilt
# Usage: scripts/gitea/build.sh [-f]      (-f rebuilds even when the cache is current)
# Cold on 2 shared cores this takes many minutes; run it in the background.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VERSION=v1.27.3 # keep in step with server/go.mod
DEST=${GITEA_CACHE:-${HOME:-/root}/.cache/fleetaudit/gitea}
mkdir -p "$DEST/bin"
# One build at a time; the tests (internal/giteatest) wait on this lock too.
exec 9>"$DEST/.build.lock"
flock 9
if [ "${1:-}" != "-f" ] && [ -x "$DEST/bin/gitea" ] && [ "$(cat "$DEST/VERSION" 2>/dev/null)" = "$VERSION" ]; then
	echo "gitea $VERSION already built in $DEST"
	exit 0
fi
cd "$HERE/server"
start=$(date +%s)
# No go mod download first: go build fetches only the modules it compiles
# (251 of the 261 that server/go.mod requires).
# TAGS empty and CGO_ENABLED=0: Gitea's Makefile defaults (modernc sqlite, no bindata).
CGO_ENABLED=0 go build -buildvcs=false -trimpath -tags '' \
	-ldflags "-s -w -X main.Version=${VERSION#v} -X main.Tags=" \
	-o "$DEST/bin/gitea.tmp" .
mv "$DEST/bin/gitea.tmp" "$DEST/bin/gitea"
SRC=$(go list -m -f '{{.Dir}}' gitea.dev)
rm -rf "$DEST/share.tmp" && mkdir -p "$DEST/share.tmp"
cp -r "$SRC/templates" "$SRC/options" "$SRC/public" "$DEST/share.tmp/"
chmod -R u+w "$DEST/share.tmp" # the module cache is read-only
rm -rf "$DEST/share" && mv "$DEST/share.tmp" "$DEST/share"
echo "$VERSION" >"$DEST/VERSION"
echo "gitea $VERSION built in $(($(date +%s) - start))s: $("$DEST/bin/gitea" --version)"
