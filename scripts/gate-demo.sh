#!/bin/sh
# The incident as a pull request: copy examples/config-repo into a fresh git
# repository, plant hugetlb_cma in the layer every fleet shares, and gate the
# change against last night's snapshots of the fleet that runs the repo
# (examples/config-repo/fleet, recorded into a history store), so the gate
# prints a per-host plan. The gate must stop it (exit 1); this script fails
# otherwise.
set -eu
bin=${1:-bin/fleetaudit}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir "$repo"
cp -R examples/config-repo/. "$repo"
rm -rf "$repo/fleet"
${GO:-go} run examples/config-repo/fleet/generate.go "$work/snapshots"
"$bin" audit --snapshots "$work/snapshots" --record --store "$work/store.db" --fail-on none -o /dev/null
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=demo -c user.email=demo@fleetaudit.invalid -c commit.gpgsign=false commit -q -m "fleet configuration"
mkdir -p "$repo/layers/base/etc/default/grub.d"
cat > "$repo/layers/base/etc/default/grub.d/60-hugetlb.cfg" <<'CFG'
# Reserve CMA for 1G hugepages on the web servers.
GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G"
CFG
echo "\$ fleetaudit gate --repo <copy of examples/config-repo> --base main --store=<the fleet's store>   # with 60-hugetlb.cfg added to layers/base"
status=0
"$bin" gate --repo "$repo" --base main --store="$work/store.db" || status=$?
if [ "$status" -ne 1 ]; then
	echo "gate-demo: the gate exited $status, want 1 (change stopped)" >&2
	exit 1
fi
echo "gate-demo: the change is stopped (exit 1), as it should be"
