# Site override: the 100G port was renamed with the netplan migration.
export NCCL_SOCKET_IFNAME=ens1f0np0
if [ -d /opt/hpcx ]; then . /opt/hpcx/hpcx-init.sh; fi
