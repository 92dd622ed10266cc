/*
 * main.c: a C99 program built against an installed parsec-net through CMake's
 * find_package(ParsecNet), as a game's build would (see CMakeLists.txt beside it).
 *
 * It initializes the library, binds the UDP backend to loopback on a free port, loads the UDP
 * backend by name with `net.api udp` (so the loader must find libparsec_backend_udp.so from where
 * the library is installed), prints the console's `backend:` status line (which names the backend
 * file it loaded), sends a datagram to the loopback node made from its own node's port, receives
 * it, and prints OK. Any failure prints a FAIL line and exits with status 1.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parsec_net.h"

static void fail(const char *what)
{
    printf("FAIL %s: %s\n", what, NET_GetLastError());
    NET_Shutdown();
    exit(1);
}

/* Run a console line as a player would type it; fail unless it succeeds. */
static void console(const char *line, char *out, size_t out_len)
{
    if (NET_ConsoleExec(line, out, out_len) < 0) {
        printf("FAIL `%s`: %s\n", line, out);
        NET_Shutdown();
        exit(1);
    }
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    char out[4096];
    const char *backend_line;
    NET_Node me, loopback, from;
    char text[128];
    const char *port;
    char target[160];
    const char message[] = "hello from an installed parsec-net (C, CMake)";
    char buf[2048];
    int32_t got = 0;
    double deadline;

    if (NET_Init() != NET_OK) {
        fail("NET_Init");
    }
    console("net.udp.bind 127.0.0.1", out, sizeof out);
    console("net.udp.ipv6 0", out, sizeof out);
    console("net.port 0", out, sizeof out);
    console("net.api udp", out, sizeof out);

    console("status", out, sizeof out);
    backend_line = strstr(out, "backend: ");
    if (backend_line == NULL) {
        printf("FAIL no backend line in status:\n%s\n", out);
        return 1;
    }
    printf("%.*s\n", (int)strcspn(backend_line, "\n"), backend_line);

    /* Our own node, and the loopback node on its port. */
    if (NETs_LocalNode(&me) < 0) {
        fail("NETs_LocalNode");
    }
    if (NETs_PrintNode(&me, text, sizeof text) < 0) {
        fail("NETs_PrintNode");
    }
    port = strrchr(text, ':');
    if (port == NULL) {
        printf("FAIL no port in the local node '%s'\n", text);
        return 1;
    }
    snprintf(target, sizeof target, "127.0.0.1%s", port);
    if (NETs_ResolveNode(target, &loopback) < 0) {
        fail("NETs_ResolveNode");
    }
    printf("local node %s, sending to %s\n", text, target);

    if (NETs_SendDatagram(&loopback, message, sizeof message) < 0) {
        fail("NETs_SendDatagram");
    }
    deadline = now_seconds() + 5.0;
    while (got == 0 && now_seconds() < deadline) {
        struct timespec pause = {0, 1000000};
        NETs_MaintainNet();
        got = NETs_ReceiveDatagram(&from, buf, sizeof buf);
        if (got == 0) {
            nanosleep(&pause, NULL);
        }
    }
    if (got < 0) {
        fail("NETs_ReceiveDatagram");
    }
    if (got != (int32_t)sizeof message || memcmp(buf, message, sizeof message) != 0) {
        printf("FAIL the datagram did not come back whole (%d bytes)\n", (int)got);
        return 1;
    }
    NET_Shutdown();
    printf("OK\n");
    return 0;
}
