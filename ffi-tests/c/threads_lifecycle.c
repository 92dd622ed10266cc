/*
 * threads_lifecycle.c: NET_GetLastError is per thread (a failure on one thread is not seen on
 * another, "" on a thread that never failed, and a successful call leaves the last failure's
 * message as docs/c-api.md says); NET_Init from four threads at once gives one instance; other
 * threads calling into the library while the main thread runs NET_Shutdown/NET_Init cycles get
 * NET_OK or NET_ERR_NOT_INITIALIZED (or their own documented errors), never a crash; a console
 * error reply cut to a small buffer keeps its code; and NET_Init after a `net.subsys gameserver`
 * and NET_Shutdown puts the peer-to-peer entries back in the same jump table.
 * Exit status 0 only if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define CYCLES 100

static char seen_before[300], seen_after[300];
static int32_t thread_rc;

static void *fail_on_other_thread(void *arg)
{
    (void)arg;
    snprintf(seen_before, sizeof seen_before, "%s", NET_GetLastError());
    thread_rc = NET_SetPlayerName("");
    snprintf(seen_after, sizeof seen_after, "%s", NET_GetLastError());
    return NULL;
}

static void *init_once(void *arg)
{
    *(int32_t *)arg = NET_Init();
    return NULL;
}

static volatile int stop;
static long unexpected[2];

/* Calls every kind of function until told to stop; counts answers outside the documented ones. */
static void *hammer(void *arg)
{
    long *bad = arg;
    char out[256];
    NET_Event event;
    NET_ShipState state;
    static const float pos[3] = {1.0f, 2.0f, 3.0f};

    while (!stop) {
        int32_t rc = NET_ConsoleExec("status", out, sizeof out);

        *bad += rc != NET_OK && rc != NET_ERR_NOT_INITIALIZED;
        rc = NET_PollEvent(&event);
        *bad += rc < 0 && rc != NET_ERR_NOT_INITIALIZED;
        rc = NET_GetPlayerState(0, &state);
        *bad += rc != NET_ERR_NOT_CONNECTED && rc != NET_ERR_NOT_INITIALIZED &&
                rc != NET_ERR_INVALID_ARGUMENT;
        rc = NET_RmEvCreateLaser(9, 1, pos, pos);
        *bad += rc != NET_ERR_NOT_CONNECTED && rc != NET_ERR_NOT_INITIALIZED;
        rc = NETs_Join();
        *bad += rc != NET_ERR_NOT_CONNECTED && rc != NET_ERR_NOT_INITIALIZED;
        NETs_MaintainNet();
        (void)NET_FetchPlayerName(0);
        (void)NET_FetchOwner(9);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[4];
    int32_t rcs[4];
    char out[64], detail[400];
    const NET_JumpTable *table = NET_GetJumpTable();
    int32_t (*peer_connect)(void);
    int i, rc;

    /* Per-thread messages. */
    expect_code("NET_SetPlayerName(NULL) on the main thread", NET_SetPlayerName(NULL),
                NET_ERR_INVALID_ARGUMENT);
    pthread_create(&threads[0], NULL, fail_on_other_thread, NULL);
    pthread_join(threads[0], NULL);
    expect_true("a thread that never failed sees \"\"", seen_before[0] == '\0', seen_before);
    expect_true("the other thread's failure has its own message",
                thread_rc == NET_ERR_INVALID_ARGUMENT && strstr(seen_after, "empty") != NULL,
                seen_after);
    expect_true("the main thread still sees its own message",
                strcmp(NET_GetLastError(), "player name is NULL") == 0, NET_GetLastError());

    /* NET_Init from four threads at once. */
    for (i = 0; i < 4; i++) {
        pthread_create(&threads[i], NULL, init_once, &rcs[i]);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
    }
    expect_true("NET_Init from four threads at once: each NET_OK",
                rcs[0] == NET_OK && rcs[1] == NET_OK && rcs[2] == NET_OK && rcs[3] == NET_OK, "");
    expect_code("status after the concurrent NET_Init", NET_ConsoleExec("status", NULL, 0),
                NET_OK);
    expect_true("a successful call leaves the last failure's message",
                strcmp(NET_GetLastError(), "player name is NULL") == 0, NET_GetLastError());

    /* A console error reply cut to a small buffer keeps its code. */
    memset(out, 'X', sizeof out);
    expect_code("NET_ConsoleExec(\"frobnicate\", out, 4)", NET_ConsoleExec("frobnicate", out, 4),
                NET_ERR_UNKNOWN_COMMAND);
    expect_true("the error reply is cut to 3 bytes and terminated",
                strlen(out) == 3 && out[4] == 'X', out);
    expect_code("NET_ConsoleExec(\"frobnicate\", out, 1)", NET_ConsoleExec("frobnicate", out, 1),
                NET_ERR_UNKNOWN_COMMAND);
    expect_true("a 1-byte buffer gets the terminator", out[0] == '\0', "");
    expect_code("NET_ConsoleExec(\"frobnicate\", NULL, 0)",
                NET_ConsoleExec("frobnicate", NULL, 0), NET_ERR_UNKNOWN_COMMAND);
    expect_true("the message is still there for NET_GetLastError",
                strstr(NET_GetLastError(), "frobnicate") != NULL, NET_GetLastError());

    /* Other threads call in while the main thread shuts down and starts again. */
    use_udp_on_loopback();
    pthread_create(&threads[0], NULL, hammer, &unexpected[0]);
    pthread_create(&threads[1], NULL, hammer, &unexpected[1]);
    for (i = 0; i < CYCLES; i++) {
        NET_Shutdown();
        rc = NET_Init();
        if (rc != NET_OK) {
            expect_code("NET_Init in a cycle", rc, NET_OK);
        }
    }
    stop = 1;
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    snprintf(detail, sizeof detail, "%ld and %ld unexpected answers", unexpected[0],
             unexpected[1]);
    expect_true("calls from other threads during 100 shutdown/init cycles answer as documented",
                unexpected[0] == 0 && unexpected[1] == 0, detail);

    /* NET_Init selects the peer-to-peer protocol again after a switch and a shutdown. */
    peer_connect = table->Connect;
    expect_code("net.subsys gameserver", NET_ConsoleExec("net.subsys gameserver", NULL, 0),
                NET_OK);
    expect_true("net.subsys gameserver rewrote the Connect entry", table->Connect != peer_connect,
                "");
    NET_Shutdown();
    expect_code("the table's Connect after NET_Shutdown", table->Connect(),
                NET_ERR_NOT_INITIALIZED);
    expect_code("NET_Init()", NET_Init(), NET_OK);
    expect_true("NET_Init put the peer-to-peer Connect entry back in the same table",
                NET_GetJumpTable() == table && table->Connect == peer_connect, "");
    expect_true("abi_version and size unchanged",
                table->abi_version == NET_ABI_VERSION && table->size == sizeof(NET_JumpTable), "");
    NET_Shutdown();
    NET_Shutdown();
    return check_finish("threads_lifecycle");
}
