/*
 * ipx_options.c: what a player gets from `net.api ipx` with bad IPX options and from the
 * protocols IPX cannot carry (SPEC 5, 6 last paragraph, 7), typed through NET_ConsoleExec as a
 * game's console does. Run by tests/ipx_audit.rs inside a network namespace whose `eth0` is up
 * and Ethernet, with a second interface `IFDOWN` (a veth end that is down).
 *
 * Usage: ipx_options options IFDOWN
 *        ipx_options nocap
 *        ipx_options hold [PORT]
 *        ipx_options second
 *
 * `options`: starting on UDP, `net.api ipx` with `net.ipx.interface` set to an interface that
 * does not exist, one that is down, `lo`, a name longer than IFNAMSIZ - 1 (then `""` puts the
 * option back to its default, and IPX opens on the first Ethernet interface up), and garbage
 * `net.port` values (the IPX socket number): each refused with a non-zero code and one line
 * naming the problem, UDP still active on its port, no raw packet socket left open in the
 * namespace (/proc/self/net/packet) and no descriptor more than before. Then IPX on eth0:
 * `status` names ipx, the local node 00000000:<eth0 MAC>:197E and the MAC on its binding line;
 * `net.subsys slotserver` / `gameserver` refused (protocol, backend and node unchanged); a bad
 * interface while IPX is active keeps IPX with its one socket; back on UDP, `net.api ipx` is
 * refused while slotserver or gameserver is selected (protocol and backend unchanged).
 *
 * `nocap` (run without CAP_NET_RAW): `net.api ipx` on eth0 is refused with a line that says
 * CAP_NET_RAW is needed, UDP stays active, no packet socket is left.
 *
 * `hold [PORT]`: IPX on eth0 and socket PORT (default 6526: 197E), prints `HOLDING` and keeps
 * the socket until its stdin ends. `second`, run in the same namespace while `hold` and
 * `hold 0` (socket 869C) run: `net.api ipx` on the same interface and socket 197E is refused
 * with a line saying the socket is in use (two programs with the same IPX node would each take
 * the other's frames for their own and split the game), UDP stays active; so is 869C
 * (`net.port 34460`); `net.port 0` opens the first dynamic socket, 4000; 197F (`net.port
 * 6527`) opens. Once its stdin ends (the test has ended both holders), `net.api ipx` on 197E
 * works again.
 *
 * One ok/FAIL line per check and a summary (check.h); exit 0 when every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static char reply[4096];
static char status_text[8192];

static int32_t exec_line(const char *line)
{
    int32_t rc;
    reply[0] = '\0';
    rc = NET_ConsoleExec(line, reply, sizeof reply);
    printf("EXEC rc=%d line=\"%s\" reply=\"%s\"\n", (int)rc, line, reply);
    fflush(stdout);
    return rc;
}

static void load_status(void)
{
    status_text[0] = '\0';
    NET_ConsoleExec("status", status_text, sizeof status_text);
}

/* Raw packet sockets open in this network namespace (lines of /proc/self/net/packet after its
 * header); -1 when it cannot be read. */
static int packet_sockets(void)
{
    FILE *f = fopen("/proc/self/net/packet", "r");
    char line[512];
    int lines = 0;
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        lines++;
    }
    fclose(f);
    return lines > 0 ? lines - 1 : 0;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            n++;
        }
    }
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

/* The MAC of `ifname` as 12 upper-case hex digits (the IPX node text), and as aa:bb:.. */
static int read_mac(const char *ifname, char node[13], char colons[18])
{
    char path[128];
    FILE *f;
    int i, j = 0;
    snprintf(path, sizeof path, "/sys/class/net/%s/address", ifname);
    f = fopen(path, "r");
    if (f == NULL || fgets(colons, 18, f) == NULL) {
        if (f != NULL) {
            fclose(f);
        }
        return 0;
    }
    fclose(f);
    for (i = 0; colons[i] != '\0' && j < 12; i++) {
        if (isxdigit((unsigned char)colons[i])) {
            node[j++] = (char)toupper((unsigned char)colons[i]);
        }
    }
    node[j] = '\0';
    return j == 12;
}

static int has(const char *text, const char *needle)
{
    return strstr(text, needle) != NULL;
}

/* `line` must fail (rc < 0) with one line in `out` mentioning `needle`. */
static void expect_refused(const char *line, const char *needle)
{
    char what[300];
    char detail[4400];
    int32_t rc = exec_line(line);
    snprintf(what, sizeof what, "'%s' refused", line);
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\" (want \"%s\" in one line)", (int)rc,
             reply, needle);
    expect_true(what, rc < 0 && is_one_line(reply) && has(reply, needle), detail);
}

static void expect_ok(const char *line)
{
    char what[300];
    int32_t rc = exec_line(line);
    snprintf(what, sizeof what, "'%s' accepted", line);
    expect_true(what, rc >= 0, reply);
}

/* `status` must contain every one of the NULL-terminated `needles`. */
static void expect_status(const char *what, const char *const *needles)
{
    char detail[8400];
    int ok = 1;
    const char *missing = "";
    load_status();
    for (; *needles != NULL; needles++) {
        if (!has(status_text, *needles)) {
            ok = 0;
            missing = *needles;
            break;
        }
    }
    snprintf(detail, sizeof detail, "missing \"%s\" in:\n%s", missing, status_text);
    expect_true(what, ok, ok ? "" : detail);
}

static void expect_sockets(const char *what, int want, int fds_before, int fds_want_delta)
{
    char detail[200];
    int sockets = packet_sockets();
    int fds = open_fds();
    snprintf(detail, sizeof detail, "%d packet sockets (want %d), %d descriptors (want %d)",
             sockets, want, fds, fds_before + fds_want_delta);
    expect_true(what, sockets == want && fds == fds_before + fds_want_delta, detail);
}

/* A bad `net.ipx.interface` value: `net.api ipx` refused naming the problem, `keeping` kept. */
static void bad_interface(const char *value, const char *needle, const char *keeping,
                          int sockets, int fds_before)
{
    char line[128];
    char what[200];
    char keep[64];
    snprintf(line, sizeof line, "net.ipx.interface %s", value);
    expect_ok(line);
    expect_refused("net.api ipx", needle);
    snprintf(keep, sizeof keep, "keeping %s", keeping);
    snprintf(what, sizeof what, "interface '%s': the reply says %s", value, keep);
    expect_true(what, has(reply, keep), reply);
    snprintf(what, sizeof what, "interface '%s': nothing left open", value);
    expect_sockets(what, sockets, fds_before, 0);
}

static int run_options(const char *down)
{
    static const char *const on_udp[] = {"protocol: peer", "backend: udp",
                                         "socket: open on port 6526", NULL};
    char node[13], colons[18];
    char node_line[64], binding[80];
    const char *on_ipx[6];
    char too_long[32];
    int fds;

    expect_true("eth0 has a MAC", read_mac("eth0", node, colons), colons);
    colons[17] = '\0';
    snprintf(node_line, sizeof node_line, "local node 00000000:%s:197E", node);
    snprintf(binding, sizeof binding, "binding: interface eth0, MAC %s", colons);
    on_ipx[0] = "protocol: peer";
    on_ipx[1] = "backend: ipx";
    on_ipx[2] = node_line;
    on_ipx[3] = binding;
    /* The socket number in hex as the node prints it, with the net.port that gives it. */
    on_ipx[4] = "socket: open on IPX socket 197E (port 6526), local node";
    on_ipx[5] = NULL;

    expect_code("NET_Init", NET_Init(), NET_OK);
    expect_ok("net.port 6526");
    expect_ok("net.api udp");
    expect_status("UDP active on 6526", on_udp);
    fds = open_fds();
    expect_sockets("no packet socket on UDP", 0, fds, 0);

    bad_interface("nosuch0", "no interface \"nosuch0\"", "udp", 0, fds);
    bad_interface(down, "is down", "udp", 0, fds);
    bad_interface("lo", "not an Ethernet interface", "udp", 0, fds);
    expect_refused("net.api ipx", "a loopback interface");
    memset(too_long, 'x', 16);
    too_long[16] = '\0';
    bad_interface(too_long, "net.ipx.interface", "udp", 0, fds);
    expect_status("UDP still active after the bad interfaces", on_udp);

    /* Back to the default interface (the first Ethernet one that is up: eth0 here). */
    expect_ok("net.ipx.interface \"\"");
    expect_true("\"\" clears the option", has(reply, "the backend's default"), reply);
    expect_ok("net.ipx.interface");
    expect_true("the option shows as not set", has(reply, "not set"), reply);
    expect_ok("net.api ipx");
    expect_true("the net.api reply names the IPX socket and its port",
                has(reply, "packet backend ipx active on IPX socket 197E (port 6526)"), reply);
    expect_status("IPX on the default interface eth0", on_ipx);
    expect_ok("net.api udp");
    expect_status("back on UDP", on_udp);
    expect_sockets("no packet socket back on UDP", 0, fds, 0);

    expect_ok("net.ipx.interface eth0");
    expect_refused("net.port abc", "not a port number");
    expect_refused("net.port 65536", "not a port number");
    expect_refused("net.port -1", "not a port number");
    expect_refused("net.port 0x197E", "not a port number");
    expect_refused("net.port 197E", "not a port number");
    expect_refused("net.port 6526 6527", "net.port");
    expect_status("the port is still 6526", on_udp);
    expect_sockets("nothing opened by the bad ports", 0, fds, 0);

    expect_ok("net.api ipx");
    expect_status("IPX active on eth0 with the eth0 MAC and socket 197E", on_ipx);
    /* The UDP socket (two: IPv4 and IPv6, or one) became one packet socket. */
    expect_true("one packet socket on IPX", packet_sockets() == 1, "");
    fds = open_fds();

    expect_refused("net.subsys slotserver", "peer-to-peer");
    expect_refused("net.subsys gameserver", "peer-to-peer");
    expect_status("still peer over IPX, same node", on_ipx);
    expect_sockets("still one packet socket", 1, fds, 0);

    bad_interface("nosuch0", "no interface", "ipx", 1, fds);
    bad_interface(down, "is down", "ipx", 1, fds);
    expect_status("IPX kept after bad interfaces", on_ipx);

    expect_ok("net.ipx.interface eth0");
    expect_ok("net.api udp");
    expect_status("back on UDP", on_udp);
    expect_true("no packet socket back on UDP", packet_sockets() == 0, "");
    fds = open_fds();

    {
        static const char *const slot[] = {"protocol: slotserver", "backend: udp", NULL};
        static const char *const game[] = {"protocol: gameserver", "backend: udp", NULL};
        expect_ok("net.subsys slotserver");
        expect_refused("net.api ipx", "peer-to-peer");
        expect_true("the refusal names slotserver", has(reply, "slotserver"), reply);
        expect_status("slotserver over UDP kept", slot);
        expect_sockets("no packet socket left (slotserver)", 0, fds, 0);
        expect_ok("net.subsys gameserver");
        expect_refused("net.api ipx", "peer-to-peer");
        expect_true("the refusal names gameserver", has(reply, "gameserver"), reply);
        expect_status("gameserver over UDP kept", game);
        expect_sockets("no packet socket left (gameserver)", 0, fds, 0);
        expect_ok("net.subsys peer");
    }
    expect_ok("net.api ipx");
    expect_status("IPX again once peer is selected", on_ipx);
    NET_Shutdown();
    expect_true("no packet socket after NET_Shutdown", packet_sockets() == 0, "");
    return check_finish("ipx_options");
}

static int run_nocap(void)
{
    static const char *const on_udp[] = {"protocol: peer", "backend: udp",
                                         "socket: open on port 6526", NULL};
    int fds;
    expect_code("NET_Init", NET_Init(), NET_OK);
    expect_ok("net.port 6526");
    expect_ok("net.api udp");
    fds = open_fds();
    expect_ok("net.ipx.interface eth0");
    expect_refused("net.api ipx", "CAP_NET_RAW");
    {
        const char *last = NET_GetLastError();
        expect_true("NET_GetLastError names CAP_NET_RAW too",
                    last != NULL && has(last, "CAP_NET_RAW") && is_one_line(last),
                    last != NULL ? last : "(NULL)");
    }
    expect_true("the refusal keeps udp", has(reply, "keeping udp"), reply);
    expect_status("UDP still active", on_udp);
    expect_sockets("nothing left open", 0, fds, 0);
    NET_Shutdown();
    return check_finish("ipx_options");
}

static int run_hold(const char *port)
{
    char line[64];
    char port_line[64];
    expect_code("NET_Init", NET_Init(), NET_OK);
    snprintf(port_line, sizeof port_line, "net.port %s", port);
    expect_ok(port_line);
    expect_ok("net.ipx.interface eth0");
    expect_ok("net.api ipx");
    printf("HOLDING\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) != NULL) {
    }
    NET_Shutdown();
    return check_finish("ipx_options");
}

static int run_second(void)
{
    static const char *const on_udp[] = {"protocol: peer", "backend: udp", NULL};
    static const char *const on_197f[] = {"backend: ipx", ":197F", NULL};
    static const char *const on_197e[] = {"backend: ipx", ":197E", NULL};
    static const char *const on_4000[] = {"backend: ipx", ":4000",
                                          "socket: open on IPX socket 4000 (port 16384)", NULL};
    char line[64];
    int fds;
    expect_code("NET_Init", NET_Init(), NET_OK);
    expect_ok("net.port 6526");
    expect_ok("net.api udp");
    fds = open_fds();
    expect_ok("net.ipx.interface eth0");
    expect_refused("net.api ipx", "in use");
    expect_true("the refusal names the socket", has(reply, "197E"), reply);
    expect_true("the refusal keeps udp", has(reply, "keeping udp"), reply);
    expect_status("UDP still active", on_udp);
    expect_true("no descriptor left", open_fds() == fds, "");
    expect_ok("net.port 34460");
    expect_refused("net.api ipx", "socket 869C");
    expect_ok("net.port 0");
    expect_ok("net.api ipx");
    expect_status("port 0 with 869C taken: the first dynamic socket", on_4000);
    expect_ok("net.api udp");
    expect_ok("net.port 6527");
    expect_ok("net.api ipx");
    expect_status("IPX on socket 197F", on_197f);
    printf("WAITING\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) != NULL) {
    }
    expect_ok("net.port 6526");
    expect_status("IPX on socket 197E once the other program has ended", on_197e);
    NET_Shutdown();
    return check_finish("ipx_options");
}

int main(int argc, char **argv)
{
    if ((argc == 2 || argc == 3) && strcmp(argv[1], "hold") == 0) {
        return run_hold(argc == 3 ? argv[2] : "6526");
    }
    if (argc == 2 && strcmp(argv[1], "second") == 0) {
        return run_second();
    }
    if (argc == 3 && strcmp(argv[1], "options") == 0) {
        return run_options(argv[2]);
    }
    if (argc == 2 && strcmp(argv[1], "nocap") == 0) {
        return run_nocap();
    }
    fprintf(stderr, "usage: ipx_options options IFDOWN | nocap | hold | second\n");
    return 2;
}
