/*
 * bench_jump_table.c: a benchmark, not a test. Times a cheap NETs_ call (NETs_CompareNodes on two
 * UDP nodes) made through the jump table, as the header's macro does, against the same call made
 * to the exported function directly ((NETs_CompareNodes)(a, b) bypasses the function-like macro).
 * The two are measured in interleaved repetitions so drift affects both alike; the best and the
 * median repetition of each are printed in ns per call, with their ratio.
 *
 *   usage: bench_jump_table [MILLIONS_OF_CALLS_PER_REPETITION [REPETITIONS]]   (default 2 7)
 *
 * Run it with `cargo run -p parsec-net-ffi-tests --example bench_jump_table --release`.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "parsec_net.h"

#define MAX_REPETITIONS 101

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The sum keeps the compiler from dropping calls; it is printed at the end. */
static double time_table(const NET_Node *a, const NET_Node *b, long calls, long *sum)
{
    double start = now_ns();
    long i;

    for (i = 0; i < calls; i++) {
        *sum += NETs_CompareNodes(a, b);
    }
    return (now_ns() - start) / (double)calls;
}

static double time_direct(const NET_Node *a, const NET_Node *b, long calls, long *sum)
{
    double start = now_ns();
    long i;

    for (i = 0; i < calls; i++) {
        *sum += (NETs_CompareNodes)(a, b);
    }
    return (now_ns() - start) / (double)calls;
}

static int compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    double millions = argc > 1 ? atof(argv[1]) : 2.0;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    long calls, sum = 0;
    double table[MAX_REPETITIONS], direct[MAX_REPETITIONS];
    NET_Node a, b;
    int r;

    if (millions <= 0 || reps < 1 || reps > MAX_REPETITIONS) {
        fprintf(stderr, "usage: %s [MILLIONS_OF_CALLS > 0 [REPETITIONS 1-%d]]\n", argv[0],
                MAX_REPETITIONS);
        return 2;
    }
    calls = (long)(millions * 1e6);
    if (NET_Init() != NET_OK || NETs_ResolveNode("127.0.0.1:7000", &a) != NET_OK ||
        NETs_ResolveNode("127.0.0.1:7001", &b) != NET_OK) {
        fprintf(stderr, "setup failed: %s\n", NET_GetLastError());
        return 1;
    }
    time_table(&a, &b, calls / 10 + 1, &sum); /* warm up both paths */
    time_direct(&a, &b, calls / 10 + 1, &sum);
    for (r = 0; r < reps; r++) {
        /* Alternate which goes first, so neither always runs on a warmer cache. */
        if (r % 2 == 0) {
            table[r] = time_table(&a, &b, calls, &sum);
            direct[r] = time_direct(&a, &b, calls, &sum);
        } else {
            direct[r] = time_direct(&a, &b, calls, &sum);
            table[r] = time_table(&a, &b, calls, &sum);
        }
    }
    qsort(table, (size_t)reps, sizeof table[0], compare_doubles);
    qsort(direct, (size_t)reps, sizeof direct[0], compare_doubles);
    printf("NETs_CompareNodes, %ld calls x %d repetitions (checksum %ld)\n", calls, reps, sum);
    printf("  through the jump table: best %.2f ns/call, median %.2f ns/call\n", table[0],
           table[reps / 2]);
    printf("  direct exported symbol: best %.2f ns/call, median %.2f ns/call\n", direct[0],
           direct[reps / 2]);
    printf("  ratio table/direct:     best %.3f, median %.3f\n", table[0] / direct[0],
           table[reps / 2] / direct[reps / 2]);
    NET_Shutdown();
    return 0;
}
