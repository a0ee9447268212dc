export NCCL_NET_GDR_LEVEL="PHB
export NCCL_TOPO_FILE=$(ls /opt/topo/*.xml | head -1)
export NCCL_SHM_DISABLE=1
