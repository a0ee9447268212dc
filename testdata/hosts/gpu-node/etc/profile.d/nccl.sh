# NCCL bootstrap and socket traffic stay on the bonded management interface.
export NCCL_SOCKET_IFNAME=bond0
