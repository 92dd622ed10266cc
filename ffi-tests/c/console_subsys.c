/*
 * console_subsys.c: `net.subsys` as a player types it, written only from SPEC sections 4 and 5
 * (no server or other player needed): `help net.subsys`; the protocol already selected; a switch
 * while not connected (no "first" in the reply, no event); a switch while still connecting
 * ("stopped connecting (peer) first", one NET_EVENT_DISCONNECTED, no CONNECTED); bad, uppercase
 * and extra arguments (one line naming the problem and the usage, protocol unchanged); IPX and
 * the client-server protocols in both orders (refused with "supports only the peer-to-peer
 * protocol", nothing changed); `status` after each step; and the demo counts of `stop` and
 * `play` for a demo of one item ("recorded 1 item", not "1 items").
 *
 * Usage: console_subsys DEMO_FILE   (a path the program may create and overwrite)
 *
 * Prints one ok/FAIL line per check (check.h) and NOTE lines for what could not be checked here
 * (an IPX backend that cannot open on this machine).
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "check.h"

#define USAGE "usage: net.subsys peer|slotserver|gameserver"

static char out[4096];

/* Run `line`; the code, with the reply in `out`. */
static int32_t exec(const char *line)
{
    out[0] = '\0';
    return NET_ConsoleExec(line, out, sizeof out);
}

/* Run `line`, expecting NET_OK and `needle` in the reply. */
static void expect_reply(const char *line, const char *needle)
{
    char what[256];
    char detail[4300];
    int32_t rc = exec(line);

    snprintf(what, sizeof what, "\"%s\" says \"%s\"", line, needle);
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\"", (int)rc, out);
    expect_true(what, rc == NET_OK && strstr(out, needle) != NULL, detail);
}

/* `net.subsys` (no argument) shows `protocol`. */
static void expect_protocol(const char *protocol)
{
    char want[64];

    snprintf(want, sizeof want, "net.subsys = %s", protocol);
    expect_reply("net.subsys", want);
}

/* The first line of `status` is "protocol: PROTOCOL (STATE" and no game line shows a slot. */
static void expect_status_not_in_game(const char *protocol)
{
    char want[128];
    char what[160];
    char detail[4300];
    int32_t rc = exec("status");

    snprintf(want, sizeof want, "protocol: %s (not connected)\n", protocol);
    snprintf(what, sizeof what, "status shows %s, not connected, no slot", protocol);
    snprintf(detail, sizeof detail, "rc %d, status \"%s\"", (int)rc, out);
    expect_true(what,
                rc == NET_OK && strncmp(out, want, strlen(want)) == 0 &&
                    strstr(out, "\ngame: not in a game (slot -, 0 other players, not joined") !=
                        NULL,
                detail);
}

/* Poll every event now; how many of `type` there were and how many in all. */
static int poll_events(uint32_t type, int *all)
{
    NET_Event ev;
    int count = 0;

    *all = 0;
    while (NET_PollEvent(&ev) == 1) {
        (*all)++;
        if (ev.type == type) {
            count++;
        }
    }
    return count;
}

/* A bad argument: refused with NET_ERR_INVALID_ARGUMENT, one line naming the command and the
 * usage; the protocol stays `protocol`. */
static void expect_bad(const char *line, const char *protocol)
{
    char what[256];
    char detail[4400];
    int32_t rc = exec(line);
    const char *last = NET_GetLastError();

    snprintf(what, sizeof what, "\"%s\" is refused in one line naming net.subsys and its usage",
             line);
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\", last error \"%s\"", (int)rc, out,
             last != NULL ? last : "(NULL)");
    expect_true(what,
                rc == NET_ERR_INVALID_ARGUMENT && is_one_line(out) &&
                    strncmp(out, "net.subsys: ", 12) == 0 && strstr(out, USAGE) != NULL,
                detail);
    expect_protocol(protocol);
}

/* IPX with the client-server protocols, in both orders. */
static void ipx_checks(void)
{
    int32_t rc;
    char detail[4300];
    int all = 0;

    /* A client-server protocol first, then `net.api ipx`: refused, UDP kept. */
    expect_reply("net.subsys gameserver", "protocol gameserver is already selected");
    rc = exec("net.api ipx");
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\"", (int)rc, out);
    expect_true("net.api ipx with gameserver selected is refused, saying IPX is peer-to-peer only",
                rc < 0 && is_one_line(out) && strstr(out, "peer-to-peer") != NULL, detail);
    expect_reply("net.api", "net.api = udp");
    expect_protocol("gameserver");
    expect_reply("net.subsys slotserver", "protocol slotserver selected");
    rc = exec("net.api ipx");
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\"", (int)rc, out);
    expect_true("net.api ipx with slotserver selected is refused, saying IPX is peer-to-peer only",
                rc < 0 && is_one_line(out) && strstr(out, "peer-to-peer") != NULL, detail);
    expect_reply("net.api", "net.api = udp");

    /* The reverse order: IPX first, then a client-server protocol. */
    expect_reply("net.subsys peer", "protocol peer selected");
    rc = exec("net.api ipx");
    if (rc != NET_OK) {
        printf("NOTE net.api ipx cannot be used here (%d: %s); the IPX-first order is not "
               "checked\n",
               (int)rc, out);
        return;
    }
    rc = exec("net.subsys slotserver");
    expect_error_mentioning("net.subsys slotserver over IPX is refused (IPX is peer-to-peer only)",
                            rc, NET_ERR_UNSUPPORTED, "supports only the peer-to-peer protocol");
    expect_true("the refusal is one line", is_one_line(out), out);
    rc = exec("net.subsys GameServer");
    expect_error_mentioning("net.subsys GameServer over IPX is refused (IPX is peer-to-peer only)",
                            rc, NET_ERR_UNSUPPORTED, "supports only the peer-to-peer protocol");
    expect_protocol("peer");
    expect_reply("net.api", "net.api = ipx");
    expect_reply("net.subsys peer", "protocol peer is already selected");
    expect_true("no event from refused switches", poll_events(NET_EVENT_DISCONNECTED, &all) == 0 &&
                                                     all == 0,
                "");
    expect_reply("net.api udp", "udp");
    use_udp_on_loopback();
}

int main(int argc, char **argv)
{
    static const char *const bad[] = {
        "net.subsys bogus",          "net.subsys peer extra",   "net.subsys slot",
        "net.subsys peer,gameserver", "net.subsys \"peer\"",     "net.subsys -h",
        "net.subsys p2p",            "net.subsys gameserver 1",
    };
    char line[600];
    char detail[4300];
    int all = 0;
    int disconnected;
    size_t i;
    int32_t rc;

    if (argc != 2) {
        fprintf(stderr, "usage: console_subsys DEMO_FILE\n");
        return 2;
    }
    expect_code("NET_Init", NET_Init(), NET_OK);
    use_udp_on_loopback();

    /* help */
    rc = exec("help net.subsys");
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\"", (int)rc, out);
    expect_true("help net.subsys gives the usage and says it disconnects first",
                rc == NET_OK && strstr(out, USAGE) != NULL && strstr(out, "disconnect") != NULL,
                detail);
    rc = exec("help NET.SUBSYS");
    expect_true("help NET.SUBSYS gives the same usage", rc == NET_OK && strstr(out, USAGE) != NULL,
                out);

    /* The protocol already selected, while not connected: no error, nothing left. */
    expect_protocol("peer");
    expect_reply("net.subsys peer", "protocol peer is already selected");
    expect_reply("net.subsys PEER", "protocol peer is already selected");
    expect_status_not_in_game("peer");

    /* Switching while not connected: nothing to leave, so no "first", and no event. */
    expect_reply("net.subsys slotserver", "protocol slotserver selected");
    expect_true("a switch while not connected does not say it disconnected",
                strstr(out, "first") == NULL && strstr(out, "disconnected") == NULL, out);
    expect_status_not_in_game("slotserver");
    expect_reply("players", "not connected");
    expect_reply("NET.SUBSYS GAMESERVER", "protocol gameserver selected");
    expect_status_not_in_game("gameserver");
    expect_reply("net.subsys gameserver", "protocol gameserver is already selected");
    expect_true("no event from switches while not connected",
                poll_events(NET_EVENT_DISCONNECTED, &all) == 0 && all == 0, "");

    /* Bad arguments change nothing. */
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_bad(bad[i], "gameserver");
    }

    ipx_checks();

    /* Switching while still connecting (peer-to-peer, to an address where nobody plays). */
    expect_protocol("peer");
    expect_reply("connect 127.0.0.1:9", "connecting");
    rc = exec("status");
    expect_true("status while connecting says peer and that it is looking",
                rc == NET_OK && strncmp(out, "protocol: peer (", 16) == 0 &&
                    strncmp(out, "protocol: peer (not connected)", 30) != 0,
                out);
    expect_reply("net.subsys slotserver",
                 "stopped connecting (peer) first; protocol slotserver selected");
    NETs_MaintainNet();
    disconnected = poll_events(NET_EVENT_DISCONNECTED, &all);
    snprintf(detail, sizeof detail, "%d DISCONNECTED of %d events", disconnected, all);
    expect_true("stopping to connect gives the game one DISCONNECTED and nothing else",
                disconnected == 1 && all == 1, detail);
    expect_status_not_in_game("slotserver");
    rc = NETs_Connect();
    expect_error_mentioning("NETs_Connect without net.server says so", rc,
                            NET_ERR_INVALID_ARGUMENT, "net.server");
    expect_reply("net.subsys peer", "protocol peer selected");

    /* The demo counts of one item. */
    snprintf(line, sizeof line, "record %s", argv[1]);
    expect_reply(line, "recording to");
    rc = exec("stop");
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\"", (int)rc, out);
    expect_true("stop after recording one item says \"recorded 1 item (\"",
                rc == NET_OK && strncmp(out, "recorded 1 item (", 17) == 0, detail);
    snprintf(line, sizeof line, "play %s", argv[1]);
    rc = exec(line);
    snprintf(detail, sizeof detail, "rc %d, reply \"%s\"", (int)rc, out);
    expect_true("play of a one-item demo says \"(1 item, \"",
                rc == NET_OK && strstr(out, "(1 item, ") != NULL && strstr(out, "items") == NULL,
                detail);
    exec("stop");

    NET_Shutdown();
    return check_finish("console_subsys");
}
