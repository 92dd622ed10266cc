/*
 * server_refusal.c: a game that connects to a slot or game server (tests/server_refusal.rs).
 *
 *   server_refusal PROTOCOL HOST:PORT NAME --hold
 *       connect, join, print "CONNECTED slot=S" and keep playing until stdin ends
 *   server_refusal PROTOCOL HOST:PORT NAME --refused TEXT
 *       connect and check that the server's refusal reaches the game as what SPEC section 4
 *       says: one NET_EVENT_ERROR (player_id -1) whose text holds TEXT (the server's words), no
 *       NET_EVENT_CONNECTED, the game not connected afterwards (NETs_Join: NET_ERR_NOT_CONNECTED)
 *       and free to `connect` again.
 *
 * Prints ok/FAIL lines and "server_refusal: N checks, M failed".
 */

#define _POSIX_C_SOURCE 200809L

#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

static int setup(const char *protocol, const char *server, const char *name)
{
    char out[512], line[300];
    const char *lines[] = {"net.udp.bind 127.0.0.1", "net.udp.ipv6 0", "net.port 0"};
    size_t i;
    int32_t rc;

    expect_code("NET_Init", NET_Init(), NET_OK);
    for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        expect_code(lines[i], NET_ConsoleExec(lines[i], out, sizeof out), NET_OK);
    }
    snprintf(line, sizeof line, "net.subsys %s", protocol);
    expect_code(line, NET_ConsoleExec(line, out, sizeof out), NET_OK);
    expect_code("NET_SetPlayerName", NET_SetPlayerName(name), NET_OK);
    snprintf(line, sizeof line, "connect %s", server);
    rc = NET_ConsoleExec(line, out, sizeof out);
    expect_code(line, rc, NET_OK);
    return rc == NET_OK;
}

static int stdin_ended(void)
{
    struct pollfd p;
    char buf[64];

    p.fd = 0;
    p.events = POLLIN;
    return poll(&p, 1, 0) > 0 && read(0, buf, sizeof buf) <= 0;
}

static int hold(void)
{
    NET_Event e;

    for (;;) {
        NETs_MaintainNet();
        while (NET_PollEvent(&e) == 1) {
            if (e.type == NET_EVENT_CONNECTED) {
                NETs_Join();
                printf("CONNECTED slot=%d\n", (int)e.player_id);
                fflush(stdout);
            } else if (e.type == NET_EVENT_ERROR || e.type == NET_EVENT_DISCONNECTED) {
                printf("EVENT type=%u text=\"%s\"\n", (unsigned)e.type, e.text);
                fflush(stdout);
            }
        }
        if (stdin_ended()) {
            return 0;
        }
        check_sleep_ms(10);
    }
}

static void refused(const char *want, const char *server)
{
    NET_Event e;
    int errors = 0, connected = 0;
    char text[NET_EVENT_TEXT_LEN] = "", out[512], line[300];
    long long end = check_now_ms() + 15000;

    while (check_now_ms() < end && errors == 0) {
        NETs_MaintainNet();
        while (NET_PollEvent(&e) == 1) {
            printf("EVENT type=%u player=%d text=\"%s\"\n", (unsigned)e.type, (int)e.player_id,
                   e.text);
            if (e.type == NET_EVENT_ERROR) {
                errors++;
                memcpy(text, e.text, sizeof text);
                expect_true("the error event concerns no player", e.player_id == -1, "");
            }
            connected += e.type == NET_EVENT_CONNECTED;
        }
        check_sleep_ms(10);
    }
    /* A little longer: nothing else may follow (no CONNECTED, no second error). */
    end = check_now_ms() + 300;
    while (check_now_ms() < end) {
        NETs_MaintainNet();
        while (NET_PollEvent(&e) == 1) {
            printf("EVENT type=%u player=%d text=\"%s\"\n", (unsigned)e.type, (int)e.player_id,
                   e.text);
            errors += e.type == NET_EVENT_ERROR;
            connected += e.type == NET_EVENT_CONNECTED;
        }
        check_sleep_ms(10);
    }
    expect_true("exactly one NET_EVENT_ERROR", errors == 1, text);
    expect_true("its text has the server's words", strstr(text, want) != NULL, text);
    expect_true("no NET_EVENT_CONNECTED", connected == 0, "");
    expect_code("NETs_Join after the refusal", NETs_Join(), NET_ERR_NOT_CONNECTED);
    snprintf(line, sizeof line, "connect %s", server);
    expect_code("connect again after the refusal", NET_ConsoleExec(line, out, sizeof out),
                NET_OK);
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[4], "--hold") != 0 && (strcmp(argv[4], "--refused") != 0 ||
                                                         argc != 6))) {
        fprintf(stderr, "usage: server_refusal PROTOCOL HOST:PORT NAME --hold|--refused TEXT\n");
        return 2;
    }
    if (!setup(argv[1], argv[2], argv[3])) {
        return check_finish("server_refusal");
    }
    if (strcmp(argv[4], "--hold") == 0) {
        int status = hold();

        NET_Shutdown();
        return status;
    }
    refused(argv[5], argv[2]);
    NET_Shutdown();
    return check_finish("server_refusal");
}
