# NCCL over EFA: bootstrap on the ENA interface, GPUDirect on.
export NCCL_SOCKET_IFNAME=eth0
export FI_EFA_USE_DEVICE_RDMA=1
# Left from a debugging session: forces libfabric's TCP provider.
export FI_PROVIDER=tcp
