/* Time the UDP socket system calls of any process, from the inside: an LD_PRELOAD library
 * that wraps sendto, recvfrom and recvmmsg, reads the monotonic clock around each call and,
 * when the process exits, writes the medians to $SYSCALL_TIMING_DIR/syscalls.PID (default
 * /tmp). Calls that returned datagrams and calls that found the socket empty are kept apart,
 * and the time from a receive that returned a datagram to the next send is a series of its
 * own (in a ping-pong: the receiver's whole turnaround, its own code included).
 * Used to split the whole-stack round trip of `parsecnet bench --only rtt` into the kernel's
 * part and the stack's own (docs/benchmarks.md):
 *
 *   cc -O2 -shared -fPIC -o /tmp/syscall_timing.so tools/syscall_timing.c -ldl
 *   LD_PRELOAD=/tmp/syscall_timing.so target/release/parsecnet bench --only rtt
 *   cat /tmp/syscalls.*
 *
 * The clock reads add about 40 ns to each timed call; the first 4,000,000 calls of each kind
 * are kept. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KEEP 4000000

struct series {
    const char *name;
    long long *ns;
    long count;
};

static struct series sends = {.name = "sendto"}, reads_ok = {.name = "receive, datagram"},
                     reads_empty = {.name = "receive, empty"},
                     turnaround = {.name = "datagram received -> next sendto"};

/* When the last receive that returned a datagram came back (0: a send came since). In a
 * ping-pong this measures the receiver's own time on the round trip's path: everything it
 * does between getting the datagram and starting to send the answer. */
static long long received_at;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void record(struct series *s, long long ns) {
    if (!s->ns) s->ns = malloc(sizeof *s->ns * KEEP);
    if (s->ns && s->count < KEEP) s->ns[s->count++] = ns;
}

static void *next(const char *symbol) {
    void *f = dlsym(RTLD_NEXT, symbol);
    if (!f) {
        fprintf(stderr, "syscall_timing: no %s after this library\n", symbol);
        abort();
    }
    return f;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
               socklen_t to_len) {
    static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    if (!real) real = next("sendto");
    long long start = now_ns();
    if (received_at) record(&turnaround, start - received_at);
    received_at = 0;
    ssize_t n = real(fd, buf, len, flags, to, to_len);
    record(&sends, now_ns() - start);
    return n;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                 socklen_t *from_len) {
    static ssize_t (*real)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
    if (!real) real = next("recvfrom");
    long long start = now_ns();
    ssize_t n = real(fd, buf, len, flags, from, from_len);
    long long end = now_ns();
    record(n >= 0 ? &reads_ok : &reads_empty, end - start);
    if (n >= 0) received_at = end;
    return n;
}

int recvmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags,
             struct timespec *timeout) {
    static int (*real)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
    if (!real) real = next("recvmmsg");
    long long start = now_ns();
    int n = real(fd, msgs, vlen, flags, timeout);
    long long end = now_ns();
    record(n > 0 ? &reads_ok : &reads_empty, end - start);
    if (n > 0) received_at = end;
    return n;
}

static int ascending(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static void report(FILE *out, struct series *s) {
    if (s->count == 0) {
        fprintf(out, "%s: no calls\n", s->name);
        return;
    }
    qsort(s->ns, s->count, sizeof *s->ns, ascending);
    fprintf(out, "%s: %ld calls, median %lld ns, p90 %lld ns\n", s->name, s->count,
            s->ns[s->count / 2], s->ns[s->count * 9 / 10]);
}

__attribute__((destructor)) static void write_report(void) {
    if (sends.count + reads_ok.count + reads_empty.count == 0) return;
    const char *dir = getenv("SYSCALL_TIMING_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/syscalls.%d", dir ? dir : "/tmp", (int)getpid());
    FILE *out = fopen(path, "w");
    if (!out) return;
    report(out, &sends);
    report(out, &reads_ok);
    report(out, &reads_empty);
    report(out, &turnaround);
    fclose(out);
}
