/*
 * burst_game.c: a game that queues a burst of large remote events in ONE frame, for
 * tests/backend_audit.rs. It initializes the library, runs the console lines it is given, sets
 * its name, connects by broadcast (NETs_Connect), joins, and once --expect other players are
 * seated it queues, in one frame:
 *   --burst K reliable custom events, type 700, 256 bytes each, byte i of event n =
 *             (37 * slot + 11 * n + i) mod 256, byte 0 = n (so the receiver checks order);
 *   one chat line of 255 bytes ("burst from NAME " followed by 'a'..'z' repeated);
 *   one custom event of 257 bytes (must be refused: NET_ERR_TOO_LARGE or
 *   NET_ERR_INVALID_ARGUMENT, nothing sent).
 * It then keeps running frames until it has received from every other player all K events,
 * every byte right and in order, and its chat line, then lingers and ends.
 *
 * Usage: burst_game --name NAME --expect N [--burst K] [--exec LINE]... [--duration MS]
 *                   [--linger MS]
 * Output, one line each:
 *   EXEC rc=RC line="LINE" reply="REPLY"
 *   QUEUED slot=S ok=K too_large_rc=RC text_rc=RC
 *   GOT from=S events=K text=yes|no bad=B           one per other player, at the end
 *   BAD from=S n=N why=WHY                          an event with wrong contents or order
 *   RESULT complete=yes|no slot=S
 * Exit status 0 after a run, 2 on bad usage or a failed setup line.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parsec_net.h"

#define MAX_PLAYERS 16
#define CUSTOM_TYPE 700

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static uint8_t pattern(int slot, int n, int i)
{
    return (uint8_t)(i == 0 ? n : (37 * slot + 11 * n + i) % 256);
}

static void make_text(const char *name, char *out)
{
    int len = snprintf(out, 256, "burst from %s ", name);
    int i;
    for (i = len; i < 255; i++) {
        out[i] = (char)('a' + (i % 26));
    }
    out[255] = '\0';
}

int main(int argc, char **argv)
{
    const char *name = NULL;
    int expect = -1, burst = 20, i;
    long duration = 30000, linger = 1500;
    const char *execs[32];
    int n_execs = 0;
    int got[MAX_PLAYERS], bad[MAX_PLAYERS], texted[MAX_PLAYERS], seated[MAX_PLAYERS];
    char names[MAX_PLAYERS][32];
    int slot = -1, queued = 0, joined = 0;
    long start, done_at = -1;
    char out[4096];

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            name = argv[++i];
        } else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
            expect = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--burst") == 0 && i + 1 < argc) {
            burst = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--duration") == 0 && i + 1 < argc) {
            duration = atol(argv[++i]);
        } else if (strcmp(argv[i], "--linger") == 0 && i + 1 < argc) {
            linger = atol(argv[++i]);
        } else if (strcmp(argv[i], "--exec") == 0 && i + 1 < argc && n_execs < 32) {
            execs[n_execs++] = argv[++i];
        } else {
            fprintf(stderr, "usage: burst_game --name NAME --expect N [--burst K] "
                            "[--exec LINE]... [--duration MS] [--linger MS]\n");
            return 2;
        }
    }
    if (name == NULL || expect < 1 || expect >= MAX_PLAYERS || burst < 0 || burst > 255) {
        fprintf(stderr, "burst_game: --name and --expect 1-15 are needed, --burst 0-255\n");
        return 2;
    }
    memset(got, 0, sizeof got);
    memset(bad, 0, sizeof bad);
    memset(texted, 0, sizeof texted);
    memset(seated, 0, sizeof seated);
    memset(names, 0, sizeof names);

    if (NET_Init() != NET_OK) {
        printf("RESULT complete=no slot=-1 init=\"%s\"\n", NET_GetLastError());
        return 2;
    }
    for (i = 0; i < n_execs; i++) {
        int32_t rc = NET_ConsoleExec(execs[i], out, sizeof out);
        printf("EXEC rc=%d line=\"%s\" reply=\"%s\"\n", (int)rc, execs[i], out);
        fflush(stdout);
        if (rc < 0) {
            NET_Shutdown();
            return 2;
        }
    }
    NET_SetPlayerName(name);
    if (NETs_Connect() != NET_OK) {
        printf("RESULT complete=no slot=-1 connect=\"%s\"\n", NET_GetLastError());
        NET_Shutdown();
        return 2;
    }
    start = now_ms();
    while (now_ms() - start < duration) {
        NET_Event ev;
        int others = 0, complete = 1;
        NETs_MaintainNet();
        while (NET_PollEvent(&ev) == 1) {
            int p = ev.player_id;
            if (ev.type == NET_EVENT_CONNECTED) {
                slot = p;
                if (!joined && NETs_Join() == NET_OK) {
                    joined = 1;
                }
            } else if (ev.type == NET_EVENT_PLAYER_CONNECTED && p >= 0 && p < MAX_PLAYERS) {
                seated[p] = 1;
            } else if (ev.type == NET_EVENT_PLAYER_DISCONNECTED && p >= 0 && p < MAX_PLAYERS) {
                seated[p] = 0;
            } else if (ev.type == NET_EVENT_CUSTOM && ev.custom_type == CUSTOM_TYPE && p >= 0 &&
                       p < MAX_PLAYERS) {
                int n = got[p], k, ok = ev.data_len == 256;
                for (k = 0; ok && k < 256; k++) {
                    ok = ev.data[k] == pattern(p, n, k);
                }
                if (!ok) {
                    bad[p]++;
                    printf("BAD from=%d n=%d why=len %u or bytes (first byte %u)\n", p, n,
                           (unsigned)ev.data_len, (unsigned)ev.data[0]);
                }
                got[p]++;
            } else if (ev.type == NET_EVENT_TEXT && p >= 0 && p < MAX_PLAYERS) {
                const char *from = NET_FetchPlayerName(p);
                char want[256];
                make_text(from != NULL ? from : "?", want);
                if (strcmp(ev.text, want) == 0) {
                    texted[p] = 1;
                } else {
                    bad[p]++;
                    printf("BAD from=%d n=-1 why=text \"%s\"\n", p, ev.text);
                }
            } else if (ev.type == NET_EVENT_ERROR) {
                printf("ERROR text=\"%s\"\n", ev.text);
            }
        }
        for (i = 0; i < MAX_PLAYERS; i++) {
            if (i != slot && seated[i]) {
                others++;
                if (got[i] < burst || !texted[i]) {
                    complete = 0;
                }
            }
        }
        if (!queued && slot >= 0 && others >= expect) {
            uint8_t data[257];
            char text[256];
            int ok = 0, n, k;
            int32_t big_rc, text_rc;
            for (n = 0; n < burst; n++) {
                for (k = 0; k < 256; k++) {
                    data[k] = pattern(slot, n, k);
                }
                if (NET_RmEvCustom(CUSTOM_TYPE, data, 256, NET_SEND_RELIABLE) == NET_OK) {
                    ok++;
                }
            }
            make_text(name, text);
            text_rc = NET_RmEvSendText(text);
            memset(data, 0x5a, sizeof data);
            big_rc = NET_RmEvCustom(CUSTOM_TYPE + 1, data, 257, NET_SEND_RELIABLE);
            printf("QUEUED slot=%d ok=%d too_large_rc=%d text_rc=%d\n", slot, ok, (int)big_rc,
                   (int)text_rc);
            fflush(stdout);
            queued = 1;
        }
        if (queued && complete && others >= expect && done_at < 0) {
            done_at = now_ms();
        }
        if (done_at >= 0 && now_ms() - done_at >= linger) {
            break;
        }
        sleep_ms(10);
    }
    for (i = 0; i < MAX_PLAYERS; i++) {
        if (i != slot && (seated[i] || got[i] > 0)) {
            printf("GOT from=%d events=%d text=%s bad=%d\n", i, got[i], texted[i] ? "yes" : "no",
                   bad[i]);
        }
    }
    NET_ConsoleExec("status", out, sizeof out);
    printf("STATUS %s\n", out);
    printf("RESULT complete=%s slot=%d\n", done_at >= 0 ? "yes" : "no", slot);
    fflush(stdout);
    NET_Shutdown();
    return 0;
}
