#!/bin/bash
# Shape the link of every namespace node that cluster-up.sh made: on each node's eth0 a token
# bucket of RATE on what it sends, and a delay of DELAY_US microseconds on every packet it
# receives (this kernel has no netem: an iptables NFQUEUE rule hands each arriving packet to
# nfqdelay, which holds it until DELAY_US after the kernel's receive timestamp, then accepts it).
# Two nodes talking see DELAY_US each way and RATE each way. `shape-link.sh off` removes it all.
# Needs: iptables, tc, a C compiler and libnetfilter-queue-dev (apt-get install iptables
# libnetfilter-queue-dev).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${BASE:-/tmp/slurmns}
RATE=${RATE:-1gbit}
BURST=${BURST:-32kb}        # one token bucket's worth: 32 KiB at 1 Gbit/s is 262 us of line rate
DELAY_US=${DELAY_US:-100}   # none: no NFQUEUE at all; 0: the NFQUEUE path without a delay
nodes=$(ip netns list | awk '$1 ~ /^n[0-9]+$/ {print $1}')

if [ "${1:-}" = off ]; then
  [ -s $BASE/run/nfqdelay.pids ] && xargs -r kill < $BASE/run/nfqdelay.pids 2>/dev/null || true
  rm -f $BASE/run/nfqdelay.pids
  for ns in $nodes; do
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
    ip netns exec "$ns" iptables -t mangle -F PREROUTING 2>/dev/null || true
  done
  exit 0
fi

mkdir -p $BASE/run $BASE/log
if [ ! -x $BASE/nfqdelay ] || [ $HERE/nfqdelay.c -nt $BASE/nfqdelay ]; then
  cc -O2 -o $BASE/nfqdelay $HERE/nfqdelay.c -lnetfilter_queue -lnfnetlink
fi
for ns in $nodes; do
  q=${ns#n}
  ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$RATE" burst "$BURST" latency 10ms
  [ "$DELAY_US" = none ] && continue      # the token bucket alone
  # The delay process first (it must hold the queue before packets are sent to it), then the rule.
  setsid nsenter --net=/run/netns/"$ns" $BASE/nfqdelay "$q" "$DELAY_US" \
    > $BASE/log/nfqdelay.$ns.log 2>&1 < /dev/null &
  echo $! >> $BASE/run/nfqdelay.pids
  for t in $(seq 50); do grep -q "^ *$q " /proc/$!/net/netfilter/nfnetlink_queue 2>/dev/null && break; sleep 0.1; done
  ip netns exec "$ns" iptables -t mangle -A PREROUTING -i eth0 -j NFQUEUE --queue-num "$q"
done
for ns in $nodes; do
  echo "$ns: $(ip netns exec "$ns" tc qdisc show dev eth0 | head -1); NFQUEUE rules: $(ip netns exec "$ns" iptables -t mangle -S PREROUTING | grep -c NFQUEUE || true), delay ${DELAY_US} us"
done
