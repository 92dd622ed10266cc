/* Raw UDP ping-pong between two processes on 127.0.0.1, both spinning on non-blocking
 * receives: the floor under `parsecnet bench --only rtt`, with the receive call chosen on the
 * command line, so the cost of batching receives (recvmmsg) is measured apart from the stack.
 *
 *   cc -O2 -o /tmp/udp_pingpong tools/udp_pingpong.c   (tools/pingpong.h is the shared harness)
 *   /tmp/udp_pingpong MODE [SIZE]   MODE 0: recvfrom, 1: recvmmsg of up to 32, 2: recvmmsg of 1,
 *                                   3: recvfrom, then one more that finds the socket empty,
 *                                   4: recvfrom, the two sockets connected to each other
 *
 * Mode 3 is what a receiver pays that must not leave an arrived datagram for later (as a game
 * frame must not): it knows the socket is drained only from a read that comes back empty.
 * Mode 4 is mode 0 on connected sockets, which the kernel sends and delivers to more cheaply
 * (no route lookup per datagram): what a stack with one socket per remote could gain.
 *
 * Prints p50 and p99 of 20,000 round trips of SIZE-byte datagrams (default 64) after 1,000
 * warm-up ones. See docs/benchmarks.md. */
#include "pingpong.h"

#define BATCH 32

static int mode;
static struct mmsghdr msgs[BATCH];
static struct iovec iovecs[BATCH];
static char buffers[BATCH][1536];
static struct sockaddr_storage names[BATCH];

/* Spin until one datagram has been read. */
static void receive_one(int fd) {
    for (;;) {
        if (mode == 0 || mode == 3 || mode == 4) {
            struct sockaddr_storage from;
            socklen_t len = sizeof from;
            if (recvfrom(fd, buffers[0], sizeof buffers[0], MSG_DONTWAIT, (void *)&from, &len) > 0) {
                if (mode == 3) {
                    len = sizeof from;
                    while (recvfrom(fd, buffers[1], sizeof buffers[1], MSG_DONTWAIT, (void *)&from,
                                    &len) > 0)
                        len = sizeof from;
                }
                return;
            }
        } else {
            int want = mode == 1 ? BATCH : 1;
            for (int i = 0; i < want; i++) msgs[i].msg_hdr.msg_namelen = sizeof names[i];
            if (recvmmsg(fd, msgs, want, MSG_DONTWAIT, NULL) > 0) return;
        }
    }
}

int main(int argc, char **argv) {
    static const char *labels[] = {"recvfrom", "recvmmsg 32", "recvmmsg 1",
                                   "recvfrom + draining read", "recvfrom, connected sockets"};
    if (argc < 2) {
        fprintf(stderr,
                "usage: %s MODE [SIZE]  (MODE 0 recvfrom, 1 recvmmsg 32, 2 recvmmsg 1, 3 recvfrom+drain, 4 connected)\n",
                argv[0]);
        return 2;
    }
    mode = atoi(argv[1]);
    int size = argc > 2 ? atoi(argv[2]) : 64;
    if (mode < 0 || mode > 4 || size < 1 || size > 1400) {
        fprintf(stderr, "MODE must be 0-4 and SIZE 1-1400\n");
        return 2;
    }
    for (int i = 0; i < BATCH; i++) {
        iovecs[i].iov_base = buffers[i];
        iovecs[i].iov_len = sizeof buffers[i];
        msgs[i].msg_hdr.msg_iov = &iovecs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &names[i];
    }
    pingpong_connected = mode == 4;
    char label[64];
    snprintf(label, sizeof label, "mode %d (%s), %d bytes", mode, labels[mode], size);
    pingpong_run(label, size, NULL, receive_one);
    return 0;
}
