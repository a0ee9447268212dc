#!/usr/bin/env bash
# fleetaudit over SSH side by side with Ansible fact gathering and plain
# ssh, against one real sshd on loopback reading the live "/": N inventory
# hosts, P in flight (a comma list; defaults 200 and 10,50), then the same
# behind a login shell that takes LOGIN_DELAY per command (default 1s; 0
# skips it). OLD=path/to/fleetaudit measures an older build beside it.
# Needs sshd (openssh-server), ssh and ansible:
#   apt-get install -y openssh-server openssh-client ansible
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-200}
parallel=${2:-10,50}
for tool in /usr/sbin/sshd ssh ansible; do
	if ! command -v "$tool" >/dev/null; then
		echo "ssh-vs-ansible: $tool is missing (apt-get install -y openssh-server openssh-client ansible)" >&2
		exit 1
	fi
done
make -s build
go run ./bench/sshbench -fleetaudit bin/fleetaudit -hosts "$hosts" -parallel "$parallel" \
	-login-delay "${LOGIN_DELAY:-1s}" -ansible-setup-hosts "${SETUP_HOSTS:-50}" ${OLD:+-old "$OLD"}
