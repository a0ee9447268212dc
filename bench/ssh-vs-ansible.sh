#!/usr/bin/env bash
# fleetaudit over SSH side by side with Ansible fact gathering and plain
# ssh, against one real sshd on loopback: N inventory hosts, P in flight
# (defaults 200 and 50). Needs sshd (openssh-server), ssh and ansible:
#   apt-get install -y openssh-server openssh-client ansible
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-200}
parallel=${2:-50}
for tool in /usr/sbin/sshd ssh ansible; do
	if ! command -v "$tool" >/dev/null; then
		echo "ssh-vs-ansible: $tool is missing (apt-get install -y openssh-server openssh-client ansible)" >&2
		exit 1
	fi
done
make -s build
go run ./bench/sshbench -fleetaudit bin/fleetaudit -hosts "$hosts" -parallel "$parallel"
