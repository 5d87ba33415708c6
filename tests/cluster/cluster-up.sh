#!/bin/bash
# Bring up a Slurm "cluster" of N slurmd nodes, each in its own netns, on one host.
# From the project's tried recipe (shared/cluster/cluster-up.sh), plus: node names in /etc/hosts
# (nothing asks the system resolver) and the previous slurm.conf kept for cluster-down.sh.
set -euo pipefail
N=${N:-2}                 # number of nodes (1..9)
BASE=${BASE:-/tmp/slurmns}
UTS=${UTS:-1}             # 1: each node also gets its own UTS ns (hostname nX)
CPUS=${CPUS:-1}           # CPUs per node (at most the host's)
SLURMD_TIMEOUT=${SLURMD_TIMEOUT:-30}   # seconds before an unresponsive node is marked DOWN
mkdir -p $BASE/{state,log,run}
# 1. munge (key is created by the Debian package; create one if missing)
[ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey --create
install -d -o munge -g munge -m 0755 /run/munge
runuser -u munge -- /usr/sbin/munged          # daemonizes; pid -> /run/munge/munged.pid
# 2. network: bridge 10.250.0.1/24 in the root ns, node i = netns ni at 10.250.0.(10+i)
ip link add br-slurm type bridge
ip addr add 10.250.0.1/24 dev br-slurm
ip link set br-slurm up
for i in $(seq 1 $N); do
  ip netns add n$i
  ip link add veth-n$i type veth peer name eth0 netns n$i
  ip link set veth-n$i master br-slurm up
  ip -n n$i addr add 10.250.0.$((10+i))/24 dev eth0
  ip -n n$i link set eth0 up
  ip -n n$i link set lo up
  mkdir -p $BASE/spool/n$i $BASE/tmp/n$i
done
# 3. slurm.conf (the previous one, if any, is restored by cluster-down.sh)
[ -f /etc/slurm/slurm.conf ] && [ ! -f $BASE/slurm.conf.before ] && cp /etc/slurm/slurm.conf $BASE/slurm.conf.before
mkdir -p /etc/slurm
for i in $(seq 1 $N); do grep -q " n$i # slurmns" /etc/hosts || echo "10.250.0.$((10+i)) n$i # slurmns" >> /etc/hosts; done
NODES=""; for i in $(seq 1 $N); do NODES+="NodeName=n$i NodeAddr=10.250.0.$((10+i)) CPUs=$CPUS RealMemory=4000 State=UNKNOWN"$'\n'; done
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=nscluster
SlurmctldHost=$(hostname -s)(10.250.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/%n
TmpFS=$BASE/tmp/%n
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmi2
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
SlurmdTimeout=$SLURMD_TIMEOUT
InactiveLimit=0
KillWait=5
MinJobAge=60
${NODES}PartitionName=debug Nodes=n[1-$N] Default=YES MaxTime=INFINITE State=UP
CONF
# 4. daemons (slurmctld in root ns; slurmd i in netns ni)
setsid slurmctld -D -c > $BASE/log/slurmctld.stdout 2>&1 < /dev/null &
for t in $(seq 50); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
for i in $(seq 1 $N); do
  if [ "$UTS" = 1 ]; then
    setsid nsenter --net=/run/netns/n$i unshare --uts sh -c "hostname n$i; exec slurmd -D -N n$i" > $BASE/log/slurmd.n$i.stdout 2>&1 < /dev/null &
  else
    setsid nsenter --net=/run/netns/n$i slurmd -D -N n$i > $BASE/log/slurmd.n$i.stdout 2>&1 < /dev/null &
  fi
done
for t in $(seq 100); do [ "$(sinfo -h -t idle -o %D 2>/dev/null)" = "$N" ] && break; sleep 0.2; done
sinfo
