/*
 * slot_timeout.c: SPEC section 6, "If the temporary master dies while a slave waits for its
 * slot, the slave times out with an error event and can connect again", as a game sees it.
 *
 * The program forks before NET_Init, so each process holds one library instance: the child is
 * the temporary master (the higher node: the higher port on 127.0.0.1) and the parent the
 * slave. Both connect to each other with a long connect phase, so the master is still
 * collecting requests when the slave, having heard the master's request, waits for its slot.
 * Once the slave's `status` says it waits for a slot, the parent kills the child (SIGKILL: it
 * dies, it does not leave). Then the slave must get exactly one NET_EVENT_ERROR whose text says
 * the slot request timed out (no CONNECTED), its protocol calls must say it is not connected,
 * and `connect` must work again.
 *
 * Usage: slot_timeout LOW_PORT HIGH_PORT (two free UDP ports on 127.0.0.1, LOW < HIGH)
 * Prints ok/FAIL lines and "slot_timeout: N checks, M failed".
 */

#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int setup(int port, int other)
{
    char out[512], line[64];
    const char *lines[] = {
        "net.udp.bind 127.0.0.1", "net.udp.ipv6 0", "net.peer.connect_tries 40",
        "net.peer.connect_interval 250", "net.peer.slot_tries 10", "net.peer.slot_interval 60",
    };
    size_t i;

    if (NET_Init() != NET_OK) {
        return 0;
    }
    for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        if (NET_ConsoleExec(lines[i], out, sizeof out) != NET_OK) {
            printf("setup line \"%s\": %s\n", lines[i], out);
            return 0;
        }
    }
    snprintf(line, sizeof line, "net.port %d", port);
    if (NET_ConsoleExec(line, out, sizeof out) != NET_OK) {
        return 0;
    }
    snprintf(line, sizeof line, "connect 127.0.0.1:%d", other);
    if (NET_ConsoleExec(line, out, sizeof out) != NET_OK) {
        printf("%s: %s\n", line, out);
        return 0;
    }
    return 1;
}

/* The temporary master: frames until killed (or 30 s). */
static int master(int port, int other)
{
    long long end = check_now_ms() + 30000;
    NET_Event e;

    if (!setup(port, other)) {
        return 2;
    }
    while (check_now_ms() < end) {
        NETs_MaintainNet();
        while (NET_PollEvent(&e) == 1) {
        }
        check_sleep_ms(5);
    }
    NET_Shutdown();
    return 0;
}

static int status_says(const char *needle)
{
    static char out[4096];

    return NET_ConsoleExec("status", out, sizeof out) == NET_OK && strstr(out, needle) != NULL;
}

int main(int argc, char **argv)
{
    int low, high, waiting = 0, errors = 0, connected = 0, status;
    pid_t child;
    long long end;
    NET_Event e;
    char text[NET_EVENT_TEXT_LEN] = "";
    char out[512], line[64];

    if (argc != 3 || (low = atoi(argv[1])) <= 0 || (high = atoi(argv[2])) <= low) {
        fprintf(stderr, "usage: slot_timeout LOW_PORT HIGH_PORT\n");
        return 2;
    }
    child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    if (child == 0) {
        _exit(master(high, low));
    }
    if (!setup(low, high)) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return 2;
    }
    /* Until the slave waits for its slot. */
    end = check_now_ms() + 10000;
    while (check_now_ms() < end && !waiting) {
        NETs_MaintainNet();
        while (NET_PollEvent(&e) == 1) {
            connected += e.type == NET_EVENT_CONNECTED;
        }
        waiting = status_says("waiting for a slot");
        check_sleep_ms(5);
    }
    expect_true("the lower node waits for its slot from the higher one", waiting, "");
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    expect_true("the temporary master was killed", WIFSIGNALED(status), "");

    /* 10 slot requests 60 ms apart: the error comes after about 0.6 s. */
    end = check_now_ms() + 10000;
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
        check_sleep_ms(5);
    }
    expect_true("one NET_EVENT_ERROR after the master died", errors == 1, text);
    expect_true("its text says the slot request got no answer",
                strstr(text, "slot") != NULL && strstr(text, "did not answer") != NULL, text);
    expect_true("no NET_EVENT_CONNECTED", connected == 0, "");
    expect_code("NETs_Join after the timeout", NETs_Join(), NET_ERR_NOT_CONNECTED);
    expect_code("NETs_Disconnect after the timeout", NETs_Disconnect(), NET_ERR_NOT_CONNECTED);
    /* Nobody is left: connecting again makes this game the master of a game of its own, after
     * a short connect loop (net.peer.* take effect from the next connect: set before it). */
    expect_code("a shorter connect loop",
                NET_ConsoleExec("net.peer.connect_tries 2", out, sizeof out), NET_OK);
    snprintf(line, sizeof line, "connect 127.0.0.1:%d", high);
    expect_code("connect again after the timeout", NET_ConsoleExec(line, out, sizeof out),
                NET_OK);
    end = check_now_ms() + 15000;
    while (check_now_ms() < end && connected == 0) {
        NETs_MaintainNet();
        while (NET_PollEvent(&e) == 1) {
            connected += e.type == NET_EVENT_CONNECTED;
            errors += e.type == NET_EVENT_ERROR;
        }
        check_sleep_ms(5);
    }
    expect_true("the second connect reaches a game (alone)", connected == 1, "");
    expect_true("no second error", errors == 1, "");
    NET_Shutdown();
    return check_finish("slot_timeout");
}
