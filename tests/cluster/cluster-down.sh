#!/bin/bash
# Tear down what cluster-up.sh created.
BASE=${BASE:-/tmp/slurmns}
for f in $BASE/run/slurmd*.pid $BASE/run/slurmctld.pid /run/munge/munged.pid; do
  [ -s "$f" ] && kill "$(cat $f)" 2>/dev/null
done
# Daemons whose pid file is gone or that are still finishing a step: by name, then SIGKILL.
pkill -f "^slurmd -D -N n[0-9]+$" 2>/dev/null
pkill -f "^slurmctld -D -c$" 2>/dev/null
for t in $(seq 50); do pgrep -f "^(slurmd -D -N n[0-9]+|slurmctld -D -c)$" > /dev/null || break; sleep 0.1; done
pkill -9 -f "^(slurmd -D -N n[0-9]+|slurmctld -D -c|slurmstepd.*)$" 2>/dev/null
sleep 1
for ns in $(ip netns list | awk '$1 ~ /^n[0-9]+$/ {print $1}'); do
  ip link del veth-$ns 2>/dev/null   # deletes both veth ends synchronously
  ip netns del $ns
done
ip link del br-slurm 2>/dev/null
[ -f $BASE/slurm.conf.before ] && cp $BASE/slurm.conf.before /etc/slurm/slurm.conf
grep -v ' # slurmns$' /etc/hosts > /tmp/hosts.slurmns; cat /tmp/hosts.slurmns > /etc/hosts; rm -f /tmp/hosts.slurmns
rm -rf $BASE
