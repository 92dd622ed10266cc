/*
 * netem_hub.c: the switch of an impaired namespace LAN (harness/impaired_lan.rs). It stands in
 * for `tc qdisc add dev PORT root netem delay D J loss L duplicate P reorder R C` on both ends
 * of every impaired veth, for kernels built without sch_netem: it takes every Ethernet frame a
 * host sends on its veth (through an AF_PACKET socket on the veth's other end, which sits in the
 * switch's namespace), passes it through the "from host" stage of that port, switches it (to the
 * port that owns the destination MAC, or to every other port for broadcast, multicast and MACs
 * not learned yet), and passes each copy through the "to host" stage of the port it leaves by.
 *
 * A stage does to a frame what netem does to a packet (ARP frames pass unimpaired):
 *   - duplicate: with probability P a second copy is made (each copy then goes on alone);
 *   - loss: each copy is dropped with probability L;
 *   - reorder: with probability R (correlated with the previous decision by C, as netem's
 *     correlated random numbers are) a copy is sent at once, ahead of delayed ones;
 *   - delay: every other copy waits D plus a uniform random offset in [-J, J) (at least 0), and
 *     copies leave in the order of their due times, so a jitter larger than the gap between
 *     frames reorders them too.
 * Frames keep the kernel's virtio-net header (PACKET_VNET_HDR), so partial checksums and TCP
 * segmentation offload pass through as the veth would carry them.
 *
 * Usage:
 *   netem_hub [--delay MS] [--jitter MS] [--loss PCT] [--duplicate PCT] [--reorder PCT]
 *             [--reorder-correlation PCT] [--seed N] [--max-seconds S] PORT[:clean]...
 *   PORT        an interface in this namespace (the switch's end of a host's veth); with
 *               ":clean" frames through it are not impaired (neither stage)
 *   --max-seconds S  exit after S seconds whatever happens (default 300)
 *
 * Prints "READY ports=N" once every socket is bound. Reads lines on stdin: "stats" prints one
 * line per port and direction, then STATS_END:
 *   STATS port=NAME dir=from|to frames=N dropped=N duplicated=N reordered=N overtaken=N
 *         delayed=N max_delay_ms=N passed=N send_errors=N
 * (dir=from: frames the host sent, as netem on the host's end would see them; dir=to: frames to
 * the host, as netem on the switch's end would; reordered: sent at once by the reorder rule;
 * overtaken: left the stage after a frame that entered it later; passed: ARP, not impaired).
 * At the end of stdin, or on "quit", it prints the statistics and exits 0. Exit status 2 on bad
 * usage or a socket that cannot be set up.
 */

#define _DEFAULT_SOURCE /* if_nametoindex, the AF_PACKET definitions */

#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_VNET_HDR
#define PACKET_VNET_HDR 15
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define MAX_PORTS 16
#define VNET_HDR_LEN 10 /* struct virtio_net_hdr */
#define FRAME_CAP (VNET_HDR_LEN + 65536 + 64)
#define MAX_QUEUED 8192
#define MAX_MACS 64
#define ETH_P_ALL_BE 0x0300 /* htons(ETH_P_ALL) */
#define ETHERTYPE_ARP 0x0806

/* What a stage does, in probabilities (0..1) and microseconds. */
struct impairment {
    double loss, duplicate, reorder, reorder_correlation;
    int64_t delay_us, jitter_us;
};

/* One direction of one port: its counters and its correlated reorder decision. */
struct stage {
    unsigned long frames, dropped, duplicated, reordered, overtaken, delayed, passed, send_errors;
    int64_t max_delay_us;
    double last_reorder;  /* the previous correlated random number */
    uint64_t entered;     /* frames that entered (their order numbers) */
    uint64_t left_max;    /* highest order number that has left, plus one */
};

struct port {
    const char *name;
    int fd;
    int clean;
    struct stage from; /* frames the host sent */
    struct stage to;   /* frames to the host */
};

/* A frame waiting in a stage. to_port < 0: in the "from" stage of from_port, to be switched
 * when due; else in the "to" stage of to_port, to be sent when due. */
struct queued {
    int64_t due_us;
    uint64_t seq; /* ties keep arrival order */
    uint64_t order; /* order number within its stage */
    int from_port, to_port;
    size_t len;
    unsigned char *data;
};

static struct port ports[MAX_PORTS];
static int port_count;
static struct impairment impair;
static struct queued *heap[MAX_QUEUED];
static int heap_len;
static uint64_t next_seq;
static unsigned long queue_overflow;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static struct {
    unsigned char mac[6];
    int port;
} macs[MAX_MACS];
static int mac_count;

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* xorshift64*: a uniform number in [0, 1). */
static double uniform(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* netem's correlated random number: the new one leans towards the previous by `rho`. */
static double correlated(double *last, double rho) {
    double value = uniform() * (1.0 - rho) + *last * rho;
    *last = value;
    return value;
}

static int earlier(const struct queued *a, const struct queued *b) {
    return a->due_us < b->due_us || (a->due_us == b->due_us && a->seq < b->seq);
}

static void heap_push(struct queued *q) {
    int i = heap_len++;
    heap[i] = q;
    while (i > 0 && earlier(heap[i], heap[(i - 1) / 2])) {
        struct queued *t = heap[i];
        heap[i] = heap[(i - 1) / 2];
        heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static struct queued *heap_pop(void) {
    struct queued *top = heap[0];
    int i = 0;
    heap[0] = heap[--heap_len];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < heap_len && earlier(heap[l], heap[m])) m = l;
        if (r < heap_len && earlier(heap[r], heap[m])) m = r;
        if (m == i) break;
        struct queued *t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
    return top;
}

static int is_arp(const unsigned char *data, size_t len) {
    return len >= VNET_HDR_LEN + 14 &&
           ((data[VNET_HDR_LEN + 12] << 8) | data[VNET_HDR_LEN + 13]) == ETHERTYPE_ARP;
}

/* Queue one copy of a frame in a stage, due at `due`. */
static void enqueue(struct stage *stage, const unsigned char *data, size_t len, int64_t due,
                    int from_port, int to_port) {
    if (heap_len >= MAX_QUEUED) {
        queue_overflow++;
        return;
    }
    struct queued *q = malloc(sizeof *q);
    unsigned char *copy = malloc(len);
    if (q == NULL || copy == NULL) {
        free(q);
        free(copy);
        queue_overflow++;
        return;
    }
    memcpy(copy, data, len);
    q->due_us = due;
    q->seq = next_seq++;
    q->order = stage->entered++;
    q->from_port = from_port;
    q->to_port = to_port;
    q->len = len;
    q->data = copy;
    heap_push(q);
}

/* A frame enters `stage` at `now`: impair it (unless clean or ARP) and queue what survives. */
static void pass_stage(struct stage *stage, int clean, const unsigned char *data, size_t len,
                       int64_t now, int from_port, int to_port) {
    stage->frames++;
    if (clean || is_arp(data, len)) {
        stage->passed++;
        enqueue(stage, data, len, now, from_port, to_port);
        return;
    }
    int copies = 1;
    if (impair.duplicate > 0 && uniform() < impair.duplicate) {
        copies = 2;
        stage->duplicated++;
    }
    for (int c = 0; c < copies; c++) {
        if (impair.loss > 0 && uniform() < impair.loss) {
            stage->dropped++;
            continue;
        }
        int64_t delay = 0;
        if (impair.reorder > 0 &&
            correlated(&stage->last_reorder, impair.reorder_correlation) < impair.reorder) {
            stage->reordered++;
        } else {
            delay = impair.delay_us;
            if (impair.jitter_us > 0) {
                delay += (int64_t)((uniform() * 2.0 - 1.0) * (double)impair.jitter_us);
            }
            if (delay < 0) delay = 0;
            stage->delayed++;
            if (delay > stage->max_delay_us) stage->max_delay_us = delay;
        }
        enqueue(stage, data, len, now + delay, from_port, to_port);
    }
}

static int find_mac(const unsigned char *mac) {
    for (int i = 0; i < mac_count; i++) {
        if (memcmp(macs[i].mac, mac, 6) == 0) return i;
    }
    return -1;
}

static void learn(const unsigned char *src, int port) {
    if (src[0] & 1) return; /* not a station address */
    int i = find_mac(src);
    if (i < 0) {
        if (mac_count >= MAX_MACS) return;
        i = mac_count++;
        memcpy(macs[i].mac, src, 6);
    }
    macs[i].port = port;
}

/* A frame left the "from" stage of `from`: send it into the "to" stage of its port(s). */
static void switch_frame(const unsigned char *data, size_t len, int from, int64_t now) {
    const unsigned char *eth = data + VNET_HDR_LEN;
    int target = -1;
    if (len >= VNET_HDR_LEN + 14 && !(eth[0] & 1)) {
        int known = find_mac(eth);
        if (known >= 0) target = macs[known].port;
    }
    for (int p = 0; p < port_count; p++) {
        if (p == from || (target >= 0 && p != target)) continue;
        pass_stage(&ports[p].to, ports[p].clean, data, len, now, from, p);
    }
}

static void note_leaving(struct stage *stage, uint64_t order) {
    if (order + 1 < stage->left_max) {
        stage->overtaken++;
    } else {
        stage->left_max = order + 1;
    }
}

/* Release every queued frame that is due. */
static void release_due(void) {
    for (;;) {
        int64_t now = now_us();
        if (heap_len == 0 || heap[0]->due_us > now) return;
        struct queued *q = heap_pop();
        if (q->to_port < 0) {
            note_leaving(&ports[q->from_port].from, q->order);
            switch_frame(q->data, q->len, q->from_port, now);
        } else {
            struct port *port = &ports[q->to_port];
            note_leaving(&port->to, q->order);
            if (send(port->fd, q->data, q->len, 0) < 0) port->to.send_errors++;
        }
        free(q->data);
        free(q);
    }
}

static void receive_from(int p) {
    static unsigned char frame[FRAME_CAP];
    for (;;) {
        struct sockaddr_ll from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(ports[p].fd, frame, sizeof frame, MSG_DONTWAIT,
                             (struct sockaddr *)&from, &from_len);
        if (n < 0) return; /* EAGAIN, or an error the next poll shows again */
        if (from.sll_pkttype == PACKET_OUTGOING) continue;
        if ((size_t)n < VNET_HDR_LEN + 14) continue;
        learn(frame + VNET_HDR_LEN + 6, p);
        pass_stage(&ports[p].from, ports[p].clean, frame, (size_t)n, now_us(), p, -1);
    }
}

static void print_stage(const char *name, const char *dir, const struct stage *s) {
    printf("STATS port=%s dir=%s frames=%lu dropped=%lu duplicated=%lu reordered=%lu "
           "overtaken=%lu delayed=%lu max_delay_ms=%lld passed=%lu send_errors=%lu\n",
           name, dir, s->frames, s->dropped, s->duplicated, s->reordered, s->overtaken,
           s->delayed, (long long)(s->max_delay_us / 1000), s->passed, s->send_errors);
}

static void print_stats(void) {
    for (int p = 0; p < port_count; p++) {
        print_stage(ports[p].name, "from", &ports[p].from);
        print_stage(ports[p].name, "to", &ports[p].to);
    }
    printf("STATS_END queued=%d overflow=%lu\n", heap_len, queue_overflow);
    fflush(stdout);
}

/* Read what stdin has; 0 at its end or on "quit". */
static int read_commands(void) {
    static char line[256];
    static size_t used;
    ssize_t n = read(0, line + used, sizeof line - 1 - used);
    if (n <= 0) return 0;
    used += (size_t)n;
    for (;;) {
        char *end = memchr(line, '\n', used);
        if (end == NULL) {
            if (used >= sizeof line - 1) used = 0; /* an overlong line: forget it */
            return 1;
        }
        *end = '\0';
        if (strcmp(line, "stats") == 0) {
            print_stats();
        } else if (strcmp(line, "quit") == 0) {
            return 0;
        }
        size_t consumed = (size_t)(end - line) + 1;
        memmove(line, end + 1, used - consumed);
        used -= consumed;
    }
}

static int open_port(struct port *port) {
    unsigned index = if_nametoindex(port->name);
    if (index == 0) {
        fprintf(stderr, "netem_hub: no interface %s: %s\n", port->name, strerror(errno));
        return -1;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, ETH_P_ALL_BE);
    if (fd < 0) {
        fprintf(stderr, "netem_hub: AF_PACKET socket: %s\n", strerror(errno));
        return -1;
    }
    int one = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) < 0) {
        fprintf(stderr, "netem_hub: PACKET_VNET_HDR: %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    /* Not every kernel has it; PACKET_OUTGOING frames are skipped on receipt anyway. */
    (void)setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    struct sockaddr_ll address;
    memset(&address, 0, sizeof address);
    address.sll_family = AF_PACKET;
    address.sll_protocol = ETH_P_ALL_BE;
    address.sll_ifindex = (int)index;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        fprintf(stderr, "netem_hub: bind to %s: %s\n", port->name, strerror(errno));
        close(fd);
        return -1;
    }
    struct packet_mreq promisc;
    memset(&promisc, 0, sizeof promisc);
    promisc.mr_ifindex = (int)index;
    promisc.mr_type = PACKET_MR_PROMISC;
    (void)setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promisc, sizeof promisc);
    port->fd = fd;
    return 0;
}

static int usage(const char *why) {
    fprintf(stderr,
            "netem_hub: %s\nusage: netem_hub [--delay MS] [--jitter MS] [--loss PCT] "
            "[--duplicate PCT] [--reorder PCT] [--reorder-correlation PCT] [--seed N] "
            "[--max-seconds S] PORT[:clean]...\n",
            why);
    return 2;
}

int main(int argc, char **argv) {
    long max_seconds = 300;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) == 0) {
            if (i + 1 >= argc) return usage("an option needs a value");
            char *end;
            double value = strtod(argv[++i], &end);
            if (*end != '\0' || value < 0) return usage("a value is not a number >= 0");
            if (strcmp(arg, "--delay") == 0) impair.delay_us = (int64_t)(value * 1000);
            else if (strcmp(arg, "--jitter") == 0) impair.jitter_us = (int64_t)(value * 1000);
            else if (strcmp(arg, "--loss") == 0) impair.loss = value / 100;
            else if (strcmp(arg, "--duplicate") == 0) impair.duplicate = value / 100;
            else if (strcmp(arg, "--reorder") == 0) impair.reorder = value / 100;
            else if (strcmp(arg, "--reorder-correlation") == 0)
                impair.reorder_correlation = value / 100;
            else if (strcmp(arg, "--seed") == 0) rng_state ^= (uint64_t)value * 0x100000001b3ull;
            else if (strcmp(arg, "--max-seconds") == 0) max_seconds = (long)value;
            else return usage("unknown option");
            continue;
        }
        if (port_count >= MAX_PORTS) return usage("too many ports");
        struct port *port = &ports[port_count++];
        char *colon = strchr(argv[i], ':');
        if (colon != NULL) {
            if (strcmp(colon, ":clean") != 0) return usage("a port takes only \":clean\"");
            *colon = '\0';
            port->clean = 1;
        }
        port->name = argv[i];
    }
    if (port_count < 2) return usage("at least two ports");
    if (rng_state == 0) rng_state = 1;
    for (int p = 0; p < port_count; p++) {
        if (open_port(&ports[p]) < 0) return 2;
    }
    printf("READY ports=%d\n", port_count);
    fflush(stdout);

    int64_t stop_at = now_us() + (int64_t)max_seconds * 1000000;
    struct pollfd fds[MAX_PORTS + 1];
    for (;;) {
        release_due();
        int64_t now = now_us();
        if (now >= stop_at) break;
        int64_t wait_us = stop_at - now;
        if (heap_len > 0 && heap[0]->due_us - now < wait_us) wait_us = heap[0]->due_us - now;
        if (wait_us > 1000000) wait_us = 1000000;
        for (int p = 0; p < port_count; p++) {
            fds[p].fd = ports[p].fd;
            fds[p].events = POLLIN;
        }
        fds[port_count].fd = 0;
        fds[port_count].events = POLLIN;
        /* Round up so a wait never ends just before a frame is due. */
        int ready = poll(fds, (nfds_t)port_count + 1, (int)((wait_us + 999) / 1000));
        if (ready < 0 && errno != EINTR) {
            fprintf(stderr, "netem_hub: poll: %s\n", strerror(errno));
            break;
        }
        if (ready <= 0) continue;
        for (int p = 0; p < port_count; p++) {
            if (fds[p].revents & POLLIN) receive_from(p);
        }
        if ((fds[port_count].revents & (POLLIN | POLLHUP)) && !read_commands()) break;
    }
    print_stats();
    return 0;
}
