#define _GNU_SOURCE
// nfqdelay: hold every packet of NFQUEUE <qnum> for <delay_us> microseconds, then accept.
// Usage: nfqdelay <qnum> <delay_us> [margin_us]   (run inside the network namespace that has the NFQUEUE rule)
// Copied from the project's shared recipe (shared/cluster/nfqdelay.c), plus two changes for a
// 2-core VM, where a timed wakeup comes 20-40 us late (ppoll of 100 us: median 40 us late idle,
// 20 us with both cores busy) and waking up for a new packet takes as long again, so that the
// shared version added 150-180 us to an MPI ping-pong for 100 us asked:
// - a packet is due DELAY after the kernel's receive timestamp when it has one (put the NFQUEUE
//   rule on ingress, PREROUTING; this program turns receive timestamps on), not after this
//   process got round to it;
// - the last margin_us (default 60) before a packet is due are spent polling, not sleeping.
// What remains is the NFQUEUE path itself, about 20 us a packet (measured with a 1 us delay).
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <poll.h>
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <libnfnetlink/libnfnetlink.h>

#define RING (1u << 20)
static uint32_t ids[RING]; static uint64_t due[RING];
static unsigned head, tail;
static uint64_t delay_ns, margin_ns;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void){ struct timespec t; clock_gettime(CLOCK_REALTIME,&t); return (uint64_t)t.tv_sec*1000000000ull+t.tv_nsec; }

static int cb(struct nfq_q_handle *qh, struct nfgenmsg *m, struct nfq_data *d, void *data){
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(d);
  uint32_t id = ntohl(ph->packet_id);
  if (head - tail >= RING) { nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL); return 0; }
  // From the kernel's receive timestamp where the packet has one (on ingress, with timestamping
  // on): the time this process took to wake up for it is then not added to its delay.
  struct timeval tv;
  uint64_t t0 = now_ns();
  if (nfq_get_timestamp(d, &tv) == 0) {
    uint64_t rx = (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
    if (rx <= t0 && t0 - rx < 10000000ull) t0 = rx;
  }
  ids[head % RING] = id; due[head % RING] = t0 + delay_ns; head++;
  return 0;
}
static void onsig(int s){ stop = 1; }

int main(int argc, char **argv){
  if (argc < 3) { fprintf(stderr, "usage: %s qnum delay_us [margin_us]\n", argv[0]); return 2; }
  int qnum = atoi(argv[1]); delay_ns = (uint64_t)(atof(argv[2]) * 1000.0);
  margin_ns = (uint64_t)((argc > 3 ? atof(argv[3]) : 60.0) * 1000.0);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  signal(SIGTERM, onsig); signal(SIGINT, onsig);
  struct nfq_handle *h = nfq_open(); if (!h) { perror("nfq_open"); return 1; }
  struct nfq_q_handle *qh = nfq_create_queue(h, qnum, &cb, NULL); if (!qh) { perror("nfq_create_queue"); return 1; }
  nfq_set_mode(qh, NFQNL_COPY_META, 0);
  nfq_set_queue_maxlen(qh, 1 << 16);
  nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);   // keep GSO super-packets whole
  nfnl_rcvbufsiz(nfq_nfnlh(h), 64 << 20);
  int fd = nfq_fd(h);
  // Any socket asking for receive timestamps turns them on for every packet the kernel receives.
  int on = 1, ts = socket(AF_INET, SOCK_DGRAM, 0);
  if (ts < 0 || setsockopt(ts, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on) != 0) perror("SO_TIMESTAMP");
  char buf[65536] __attribute__((aligned));
  fprintf(stderr, "nfqdelay: queue %d delay %.1f us\n", qnum, delay_ns / 1000.0);
  while (!stop) {
    uint64_t t = now_ns();
    while (tail != head && due[tail % RING] <= t) { nfq_set_verdict(qh, ids[tail % RING], NF_ACCEPT, 0, NULL); tail++; }
    int r = 1;
    if (tail == head || due[tail % RING] - t > margin_ns) {
      // Sleep until margin_ns before the next packet is due (or a new packet comes); the rest of
      // the wait is spent polling, since a timed wakeup here comes 20-40 us late.
      struct timespec to = {1, 0};
      if (tail != head) { uint64_t w = due[tail % RING] - t - margin_ns; to.tv_sec = w / 1000000000ull; to.tv_nsec = w % 1000000000ull; }
      struct pollfd p = { fd, POLLIN, 0 };
      r = ppoll(&p, 1, &to, NULL);
    }
    if (r > 0) {
      for (;;) { int n = recv(fd, buf, sizeof buf, MSG_DONTWAIT); if (n <= 0) break; nfq_handle_packet(h, buf, n); }
    }
  }
  while (tail != head) { nfq_set_verdict(qh, ids[tail % RING], NF_ACCEPT, 0, NULL); tail++; }
  nfq_destroy_queue(qh); nfq_close(h); return 0;
}
