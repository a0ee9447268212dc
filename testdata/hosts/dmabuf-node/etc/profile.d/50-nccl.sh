# NCCL defaults for interactive jobs.
NCCL_SOCKET_IFNAME=eth0
export NCCL_SOCKET_IFNAME
export NCCL_IB_HCA='=mlx5_0'
FI_PROVIDER=efa    # not exported: jobs never see it
