/*
 * server_browser.c: a game's server browser over the C API. With the masterservers given on the
 * command line (HOST:PORT each) it checks NET_FetchServerList's errors (no masterserver set,
 * NULL out with a capacity), sets them all with one `net.master A,B,C`, starts a fetch, and keeps running its
 * frame loop (NETs_MaintainNet, NET_PollEvent, a 5 ms sleep) until NET_EVENT_SERVER_LIST
 * arrives, then copies the list.
 *
 * Output, one item per line:
 *   FRAMES_BEFORE_EVENT n           frames run while the fetch was in progress
 *   EVENT count=N player_id=P data_len=D errors=TEXT
 *   TOTAL n                         the list's length from *total
 *   SERVER name|address|kind|players/max|port|udp|os|url   one per server, in list order
 * plus the check lines of check.h. Exit status 0 only if every check passed.
 *
 * With `--console MASTER SERVERNAME` last, it then sets that masterserver and types `servers`
 * twice through NET_ConsoleExec without a frame in between: both replies must list SERVERNAME
 * (the console waits for the list; it does not answer "fetching..."). Output: CONSOLE lines.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "parsec_net.h"

#define MAX_LIST 16
#define EVENT_TIMEOUT_MS 15000

int main(int argc, char **argv)
{
    NET_ServerInfo list[MAX_LIST];
    char out[256];
    char detail[700];
    size_t total = 12345;
    int32_t rc;
    int i;
    long frames = 0;
    long long deadline;
    int got_event = 0;

    const char *console_master = NULL;
    const char *console_server = NULL;

    if (argc >= 4 && strcmp(argv[argc - 3], "--console") == 0) {
        console_master = argv[argc - 2];
        console_server = argv[argc - 1];
        argc -= 3;
    }
    if (argc < 2) {
        fprintf(stderr,
                "usage: server_browser MASTER [MASTER...] [--console MASTER SERVERNAME]\n");
        return 2;
    }
    expect_code("NET_Init", NET_Init(), NET_OK);

    rc = NET_FetchServerList(list, MAX_LIST, &total);
    expect_error_mentioning("fetch without a masterserver", rc, NET_ERR_INVALID_ARGUMENT,
                            "net.master");
    expect_true("total untouched on error", total == 12345, NULL);

    {
        /* One command sets them all: net.master A,B,C (a second net.master would replace). */
        char line[300] = "net.master ";

        for (i = 1; i < argc; i++) {
            if (i > 1) {
                strncat(line, ",", sizeof line - strlen(line) - 1);
            }
            strncat(line, argv[i], sizeof line - strlen(line) - 1);
        }
        rc = NET_ConsoleExec(line, out, sizeof out);
        snprintf(detail, sizeof detail, "%s -> %d: %s", line, (int)rc, out);
        expect_true("net.master", rc == NET_OK, detail);
    }

    rc = NET_FetchServerList(NULL, 4, &total);
    expect_error_mentioning("NULL out with a capacity", rc, NET_ERR_INVALID_ARGUMENT, "NULL");

    /* Starts the fetch; nothing is there yet, and the call returns at once. */
    rc = NET_FetchServerList(NULL, 0, &total);
    snprintf(detail, sizeof detail, "returned %d, total %zu", (int)rc, total);
    expect_true("first call starts a fetch and returns 0", rc == 0 && total == 0, detail);

    deadline = check_now_ms() + EVENT_TIMEOUT_MS;
    while (!got_event && check_now_ms() < deadline) {
        NET_Event event;

        NETs_MaintainNet();
        while (NET_PollEvent(&event) == 1) {
            if (event.type == NET_EVENT_SERVER_LIST) {
                printf("FRAMES_BEFORE_EVENT %ld\n", frames);
                printf("EVENT count=%u player_id=%d data_len=%u errors=%s\n",
                       (unsigned)event.object_id, (int)event.player_id,
                       (unsigned)event.data_len, event.text);
                got_event = 1;
            }
        }
        frames++;
        check_sleep_ms(5);
    }
    expect_true("NET_EVENT_SERVER_LIST arrived", got_event, NULL);

    memset(list, 0xAB, sizeof list);
    rc = NET_FetchServerList(list, MAX_LIST, &total);
    snprintf(detail, sizeof detail, "returned %d, total %zu", (int)rc, total);
    expect_true("the list is copied", rc >= 0 && (size_t)rc == total, detail);
    printf("TOTAL %zu\n", total);
    for (i = 0; i < rc; i++) {
        const NET_ServerInfo *s = &list[i];

        printf("SERVER %s|%s|%s|%d/%d|%u|%u|%s|%s\n", s->name, s->address, s->kind,
               (int)s->players, (int)s->max_players, (unsigned)s->port, (unsigned)s->udp_port,
               s->os, s->url);
    }

    /* A smaller buffer gets the first entries and the full length. */
    rc = NET_FetchServerList(list, 1, &total);
    snprintf(detail, sizeof detail, "returned %d, total %zu", (int)rc, total);
    expect_true("capacity 1 copies one entry", rc == 1 && total >= 1, detail);

    /* The list is fresh (under 5 s): asking again starts no fetch, so no second event. */
    for (i = 0; i < 20; i++) {
        NET_Event event;

        NETs_MaintainNet();
        while (NET_PollEvent(&event) == 1) {
            expect_true("no second fetch while the list is fresh",
                        event.type != NET_EVENT_SERVER_LIST, NULL);
        }
        check_sleep_ms(5);
    }

    if (console_master != NULL) {
        char line[300];
        char reply[4096];
        int round;

        snprintf(line, sizeof line, "net.master %s", console_master);
        rc = NET_ConsoleExec(line, out, sizeof out);
        expect_true("net.master for the console", rc == NET_OK, out);
        for (round = 1; round <= 2; round++) {
            rc = NET_ConsoleExec("servers", reply, sizeof reply);
            printf("CONSOLE %d rc=%d\n%s\nCONSOLE END\n", round, (int)rc, reply);
            snprintf(detail, sizeof detail, "servers (call %d) -> %d: %.600s", round, (int)rc,
                     reply);
            expect_true("servers replies with the list", rc == NET_OK &&
                        strstr(reply, console_server) != NULL, detail);
        }
    }

    NET_Shutdown();
    rc = NET_FetchServerList(list, MAX_LIST, &total);
    expect_code("after NET_Shutdown", rc, NET_ERR_NOT_INITIALIZED);
    return check_finish("server_browser");
}
