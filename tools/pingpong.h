/* The harness shared by the C ping-pong tools (udp_pingpong.c, uring_pingpong.c): two processes
 * on 127.0.0.1, the parent timing ROUNDS round trips (after WARMUP) of a SIZE-byte datagram
 * (ROUNDS is 20,000, or $PINGPONG_ROUNDS: 100 to 10,000,000, for short runs in tests),
 * the forked child echoing each one. Each tool supplies how one side receives: `setup` runs in
 * each process before its loop (may be NULL), `receive_one` spins until one datagram has been
 * read. Prints "LABEL: p50 N ns, p99 N ns". With `pingpong_connected` set, each socket is
 * connected to the other and sends without an address (the kernel keeps the route). */
#ifndef PARSEC_NET_TOOLS_PINGPONG_H
#define PARSEC_NET_TOOLS_PINGPONG_H

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

#define DEFAULT_ROUNDS 20000
#define WARMUP 1000

static int pingpong_connected;

static long long pingpong_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int pingpong_compare(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int pingpong_socket(struct sockaddr_in *addr) {
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

/* The number of timed round trips: $PINGPONG_ROUNDS if set, else DEFAULT_ROUNDS. */
static int pingpong_rounds(void) {
    const char *text = getenv("PINGPONG_ROUNDS");
    if (!text || !*text) return DEFAULT_ROUNDS;
    char *end;
    long rounds = strtol(text, &end, 10);
    if (*end || rounds < 100 || rounds > 10000000) {
        fprintf(stderr, "PINGPONG_ROUNDS must be a number from 100 to 10000000, not \"%s\"\n", text);
        exit(2);
    }
    return (int)rounds;
}

static void pingpong_run(const char *label, int size, void (*setup)(int fd),
                         void (*receive_one)(int fd)) {
    static char payload[1400];
    const int rounds = pingpong_rounds();
    struct sockaddr_in addr_a, addr_b;
    int a = pingpong_socket(&addr_a), b = pingpong_socket(&addr_b);
    if (pingpong_connected &&
        (connect(a, (void *)&addr_b, sizeof addr_b) != 0 ||
         connect(b, (void *)&addr_a, sizeof addr_a) != 0)) {
        perror("connect");
        exit(1);
    }
    /* A connected socket is sent to without an address: its cached route is used. */
    const struct sockaddr *to_a = pingpong_connected ? NULL : (void *)&addr_a;
    const struct sockaddr *to_b = pingpong_connected ? NULL : (void *)&addr_b;
    const socklen_t to_len = pingpong_connected ? 0 : sizeof addr_a;
    pid_t echoer = fork();
    if (echoer < 0) {
        perror("fork");
        exit(1);
    }
    if (echoer == 0) {
        if (setup) setup(b);
        for (int i = 0; i < rounds + WARMUP; i++) {
            receive_one(b);
            sendto(b, payload, size, 0, to_a, to_len);
        }
        _exit(0);
    }
    if (setup) setup(a);
    long long *rtts = malloc(sizeof *rtts * rounds);
    if (!rtts) {
        perror("malloc");
        exit(1);
    }
    for (int i = 0; i < rounds + WARMUP; i++) {
        long long start = pingpong_now_ns();
        sendto(a, payload, size, 0, to_b, to_len);
        receive_one(a);
        if (i >= WARMUP) rtts[i - WARMUP] = pingpong_now_ns() - start;
    }
    waitpid(echoer, NULL, 0);
    qsort(rtts, rounds, sizeof *rtts, pingpong_compare);
    printf("%s: p50 %lld ns, p99 %lld ns\n", label, rtts[rounds / 2], rtts[rounds * 99 / 100]);
    free(rtts);
}

#endif
