#!/usr/bin/env bash
# Ground truth for checking a snapshot against a real GPU node: what the
# usual tools say about the facts fleetaudit collects. Writes $OUT/truth.txt.
set +e
exec > $OUT/truth.txt 2>&1
echo "== id"; id; echo "== uname"; uname -a; cat /etc/os-release
echo "== cmdline"; cat /proc/cmdline
echo "== grub"; cat /etc/default/grub 2>&1 | grep -v '^#' | grep -v '^$'; ls -la /etc/default/grub.d/ 2>&1; head -50 /etc/default/grub.d/* 2>&1; cat /etc/kernel/cmdline 2>&1
echo "== nvidia version"; cat /proc/driver/nvidia/version; cat /sys/module/nvidia/version; ls /proc/driver/nvidia/gpus/; cat /proc/driver/nvidia/gpus/*/information | head -40
echo "== nvidia-smi"; nvidia-smi; nvidia-smi -q | grep -iE "persistence|driver version|cuda version|product name|fabric" | sort | uniq -c
echo "== nvml"; ls -la /usr/lib/x86_64-linux-gnu/libnvidia-ml* 2>&1
echo "== nccl"; find / -xdev \( -name 'libnccl*' -o -name '*nccl*.dist-info' \) 2>/dev/null | head -40
echo "== cudart"; find / -xdev \( -name 'libcudart.so*' -o -name 'nvidia_cuda_runtime*dist-info' \) 2>/dev/null | head -40
echo "== pip"; pip list 2>/dev/null | grep -iE "nvidia|torch|nccl"; python3 -c 'import sys; print(sys.path)'
echo "== ldso"; cat /etc/ld.so.conf; head -20 /etc/ld.so.conf.d/*
echo "== modules"; cut -d' ' -f1 /proc/modules | sort | tr '\n' ' '; echo; ls /etc/modules-load.d/ /usr/lib/modules-load.d/ 2>&1; cat /etc/modules 2>&1 | grep -v '^#'
echo "== dpkg fm"; grep -A8 -E '^Package: (nvidia-fabricmanager|cuda-drivers-fabricmanager|libnccl)' /var/lib/dpkg/status | grep -E 'Package|Status|Version'
echo "== nvswitch"; ls /proc/driver/nvidia-nvswitch/devices 2>&1; ls /dev/nvidia* | tr '\n' ' '
echo "== meminfo"; grep -E 'MemTotal|Cma|Huge' /proc/meminfo; cat /sys/kernel/mm/transparent_hugepage/enabled
echo "== ib"; ls -la /sys/class/infiniband/ 2>&1; for d in /sys/class/infiniband/*; do for p in $d/ports/*; do echo $p $(cat $p/state) $(cat $p/link_layer) $(cat $p/rate); done; readlink $d/device/driver; done; ls /dev/infiniband 2>&1
echo "== iommu"; ls /sys/class/iommu 2>&1; cat /sys/kernel/iommu_groups/*/type 2>/dev/null | sort | uniq -c; grep -m1 -o hypervisor /proc/cpuinfo; cat /sys/hypervisor/type 2>&1; cat /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name 2>&1
echo "== sysctl"; for k in kernel/numa_balancing vm/max_map_count net/core/somaxconn kernel/arch; do echo $k=$(cat /proc/sys/$k 2>&1); done; ls /etc/sysctl.d /usr/lib/sysctl.d /run/sysctl.d 2>&1
echo "== limits"; grep -v '^#' /etc/security/limits.conf | grep -v '^$'; ls /etc/security/limits.d; cat /etc/security/limits.d/* 2>&1 | grep -v '^#'
echo "== logind"; grep -v '^#' /etc/systemd/logind.conf | grep -v '^$'; ls /etc/systemd/logind.conf.d /usr/lib/systemd/logind.conf.d 2>&1; systemctl --version | head -1
echo "== nccl.conf"; cat /etc/nccl.conf 2>&1; grep -h -E 'NCCL_|FI_' /etc/environment /etc/profile.d/*.sh 2>&1
echo "== persistenced"; pgrep -a nvidia-persist; cat /proc/*/comm 2>/dev/null | sort | uniq -c | sort -rn | head -5
echo "== pci nvidia"; for d in /sys/bus/pci/devices/*; do v=$(cat $d/vendor); c=$(cat $d/class); case $c in 0x0300*|0x0302*|0x0680*|0x0200*|0x0207*) echo $(basename $d) $v $c $(readlink -f $d) $(stat -c %s $d/config);; esac; done | head -40
echo "== container?"; cat /proc/1/cgroup | head -3; ls -la /.dockerenv 2>&1; cat /proc/1/comm; df -h / | tail -1
echo "== go"; which go; ls /usr/local/go 2>&1 | head -2
echo "== sysctl configured but absent"; for k in kernel/sysrq kernel/yama/ptrace_scope; do ls -la /proc/sys/$k 2>&1; done
echo "== logind binary"; ls -la /usr/lib/systemd/systemd-logind /lib/systemd/systemd-logind 2>&1
echo "== library dirs"; ls -la /usr/lib/x86_64-linux-gnu/libnccl* /usr/local/nvidia/lib64/libnvidia-ml* /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart* 2>&1
echo "== firewall"; systemctl is-enabled firewalld ufw nftables 2>&1; ls -la /etc/firewalld /etc/ufw /etc/nftables.conf /etc/sysconfig/nftables.conf 2>&1; grep -E '^(ENABLED|DEFAULT_INPUT_POLICY)' /etc/ufw/ufw.conf /etc/default/ufw 2>&1; nft list ruleset 2>&1 | head -30; iptables -S INPUT 2>&1 | head -10
echo "== net"; for i in /sys/class/net/*; do echo $(basename $i) $(cat $i/operstate) $(cat $i/mtu) $(cat $i/type); done
echo "== services memlock"; for u in kubelet containerd slurmd docker; do systemctl show -p LimitMEMLOCK -p FragmentPath -p DropInPaths $u 2>&1 | tr '\n' ' '; echo; done
echo "== rdma-core"; ls -la /usr/lib/x86_64-linux-gnu/libibverbs.so* 2>&1; ls /usr/lib/x86_64-linux-gnu/libnccl-net* 2>&1
