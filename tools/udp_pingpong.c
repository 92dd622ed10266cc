/* Raw UDP ping-pong between two processes on 127.0.0.1, both spinning on non-blocking
 * receives: the floor under `parsecnet bench --only rtt`, with the receive call chosen on the
 * command line, so the cost of batching receives (recvmmsg) is measured apart from the stack.
 *
 *   cc -O2 -o /tmp/udp_pingpong tools/udp_pingpong.c
 *   /tmp/udp_pingpong MODE [SIZE]   MODE 0: recvfrom, 1: recvmmsg of up to 32, 2: recvmmsg of 1,
 *                                   3: recvfrom, then one more that finds the socket empty
 *
 * Mode 3 is what a receiver pays that must not leave an arrived datagram for later (as a game
 * frame must not): it knows the socket is drained only from a read that comes back empty.
 *
 * Prints p50 and p99 of 20,000 round trips of SIZE-byte datagrams (default 64) after 1,000
 * warm-up ones. See docs/benchmarks.md. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define ROUNDS 20000
#define WARMUP 1000

static int mode;
static struct mmsghdr msgs[BATCH];
static struct iovec iovecs[BATCH];
static char buffers[BATCH][1536];
static struct sockaddr_storage names[BATCH];

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Spin until one datagram has been read. */
static void receive_one(int fd) {
    for (;;) {
        if (mode == 0 || mode == 3) {
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

static int compare(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int bound_socket(struct sockaddr_in *addr) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *addr;
    if (fd < 0 || bind(fd, (void *)addr, len) != 0 || getsockname(fd, (void *)addr, &len) != 0) {
        perror("socket");
        exit(1);
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODE [SIZE]  (MODE 0 recvfrom, 1 recvmmsg 32, 2 recvmmsg 1, 3 recvfrom+drain)\n",
                argv[0]);
        return 2;
    }
    mode = atoi(argv[1]);
    int size = argc > 2 ? atoi(argv[2]) : 64;
    if (mode < 0 || mode > 3 || size < 1 || size > 1400) {
        fprintf(stderr, "MODE must be 0-3 and SIZE 1-1400\n");
        return 2;
    }
    for (int i = 0; i < BATCH; i++) {
        iovecs[i].iov_base = buffers[i];
        iovecs[i].iov_len = sizeof buffers[i];
        msgs[i].msg_hdr.msg_iov = &iovecs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &names[i];
    }
    struct sockaddr_in addr_a, addr_b;
    int a = bound_socket(&addr_a), b = bound_socket(&addr_b);
    char payload[1400] = {0};
    pid_t echoer = fork();
    if (echoer == 0) {
        for (int i = 0; i < ROUNDS + WARMUP; i++) {
            receive_one(b);
            sendto(b, payload, size, 0, (void *)&addr_a, sizeof addr_a);
        }
        _exit(0);
    }
    long long *rtts = malloc(sizeof *rtts * ROUNDS);
    for (int i = 0; i < ROUNDS + WARMUP; i++) {
        long long start = now_ns();
        sendto(a, payload, size, 0, (void *)&addr_b, sizeof addr_b);
        receive_one(a);
        if (i >= WARMUP) rtts[i - WARMUP] = now_ns() - start;
    }
    waitpid(echoer, NULL, 0);
    qsort(rtts, ROUNDS, sizeof *rtts, compare);
    printf("mode %d (%s), %d bytes: p50 %lld ns, p99 %lld ns\n", mode,
           mode == 0   ? "recvfrom"
           : mode == 1 ? "recvmmsg 32"
           : mode == 2 ? "recvmmsg 1"
                       : "recvfrom + draining read",
           size,
           rtts[ROUNDS / 2], rtts[ROUNDS * 99 / 100]);
    free(rtts);
    return 0;
}
