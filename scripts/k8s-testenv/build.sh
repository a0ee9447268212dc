#!/usr/bin/env bash
# Builds etcd and kube-apiserver for the Kubernetes integration tests, from the
# Go module proxy only, into a cache outside the repository.
#   scripts/k8s-testenv/build.sh          build what the cache lacks
#   scripts/k8s-testenv/build.sh --force  rebuild both
# The binaries go to $FLEETAUDIT_K8S_BIN (default: the user cache directory's
# fleetaudit/k8s/bin, where internal/kubetest looks).
# etcd/ and apiserver/ pin the module graphs (apiserver/go.mod replaces every
# k8s.io staging module by its v0.37.2 tag, as kubernetes' own go.mod does with
# ./staging). Cold: 12-20 minutes on 2 cores; about 2 GiB of module and build cache.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${FLEETAUDIT_K8S_BIN:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/fleetaudit/k8s/bin}
K8S_VERSION=v1.37.2 # must match apiserver/go.mod
FORCE=${1:-}
mkdir -p "$BIN"

# One build at a time: a second caller waits for the first, then finds the
# binaries; the tests (internal/kubetest) wait on this lock too.
exec 9>"$BIN/.build.lock"
flock 9

# Binaries built from other go.mod files than these are rebuilt.
STAMP=$(cat "$HERE/etcd/go.mod" "$HERE/etcd/main.go" "$HERE/apiserver/go.mod" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$BIN/.stamp" 2>/dev/null)" != "$STAMP" ]; then
	FORCE=--force
fi

# The build runs in a scratch copy so the repository is never written to.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r "$HERE/etcd" "$HERE/apiserver" "$WORK/"

if [ "$FORCE" = --force ] || [ ! -x "$BIN/etcd" ]; then
	s=$(date +%s)
	(cd "$WORK/etcd" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" .)
	mv "$BIN/etcd.tmp" "$BIN/etcd" # the rename makes a half-built binary impossible to find
	echo "etcd: built in $(($(date +%s) - s))s"
fi

if [ "$FORCE" = --force ] || [ ! -x "$BIN/kube-apiserver" ]; then
	s=$(date +%s)
	V=k8s.io/component-base/version
	# Without these the server reports v0.0.0-master and clients fail to parse it.
	LDF="-s -w -X $V.gitVersion=$K8S_VERSION -X $V.gitMajor=1 -X $V.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $V.gitTreeState=clean"
	(cd "$WORK/apiserver" && go build -mod=readonly -trimpath -ldflags "$LDF" -o "$BIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
	mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
	echo "kube-apiserver: built in $(($(date +%s) - s))s"
fi

echo "$STAMP" >"$BIN/.stamp"
"$BIN/etcd" --version | sed -n 1p # sed reads to the end: head would leave etcd a SIGPIPE, and pipefail fail the build
"$BIN/kube-apiserver" --version
