/*
 * exchange.c: one endpoint of the numbered-datagram exchange, used the way a game uses the
 * library (NETs_* calls between NETs_MaintainNet frames). The test harness runs two of these and
 * drives each over stdin/stdout, one command line in, one reply line out (flushed):
 *
 *   exec LINE          run a console line          -> "ok OUTPUT" | "err CODE OUTPUT"
 *   local              this instance's node        -> "ok NODE_TEXT"
 *   peer NODE_TEXT     resolve and use as the peer -> "ok NODE_TEXT"   (old peers stay known)
 *   send FROM TO       send sequence numbers FROM..TO-1 to the peer, a frame each
 *                                                  -> "ok sent N queued Q"
 *   flush TIMEOUT_MS   run frames until nothing waits to be sent -> "ok" | "timeout queued Q"
 *   recv_until COUNT TIMEOUT_MS
 *                      run frames, receiving, until COUNT datagrams were received in total
 *                                                  -> "ok received N" | "timeout received N"
 *   check FROM TO      every number FROM..TO-1 received exactly once, nothing else, all intact,
 *                      all from a known peer      -> "ok" | "fail DETAILS"
 *   status             the console status          -> "ok STATUS"
 *   quit               NET_Shutdown and exit 0     -> "bye"
 *
 * Replies never contain a newline (newlines in console output become '|').
 * Payload: the sequence number as 4 big-endian bytes, then 12-64 filler bytes derived from it,
 * so a corrupted, truncated or misattributed datagram is detected.
 *
 * Built three ways by the harness: linked with the shared library, with the static library, and
 * with -DPARSEC_NET_STATIC_BIND (exported functions called directly, not through the table).
 */

#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parsec_net.h"

#define MAX_SEQ 65536
#define MAX_PEERS 16
#define LINE_CAP 2048
#define REPLY_CAP 8192
#define DATAGRAM_CAP 2048
#define FIRST_MISSING_SHOWN 10

#ifdef PARSEC_NET_STATIC_BIND
#define BINDING "static-bind"
#else
#define BINDING "jump-table"
#endif

/* What was received, per sequence number (saturating counts). */
static unsigned char g_seen[MAX_SEQ];
static unsigned long g_received;
static unsigned long g_corrupt;
static unsigned long g_foreign;
static unsigned long g_out_of_range;

/* The peer datagrams are sent to, and every peer used so far (datagrams drained from an old
 * backend at a switch keep that backend's sender node). */
static NET_Node g_peer;
static int g_have_peer;
static NET_Node g_known_peers[MAX_PEERS];
static int g_known_count;

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* Replace newlines so a reply stays one line. */
static void one_line(char *text)
{
    for (; *text != '\0'; text++) {
        if (*text == '\n' || *text == '\r') {
            *text = '|';
        }
    }
}

#ifdef __GNUC__
static void reply(const char *format, ...) __attribute__((format(printf, 1, 2)));
#endif

/* Print one reply line and flush it (the harness waits for it). */
static void reply(const char *format, ...)
{
    char text[REPLY_CAP];
    va_list args;

    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    one_line(text);
    printf("%s\n", text);
    fflush(stdout);
}

/* Length of the payload for a sequence number: 4-byte header + 12..64 filler bytes. */
static size_t payload_len(uint32_t seq)
{
    return 4 + 12 + (size_t)(seq % 53);
}

static unsigned char filler_byte(uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 7u + (uint32_t)i * 13u + 1u);
}

static size_t make_payload(uint32_t seq, unsigned char *buf)
{
    size_t len = payload_len(seq), i;

    buf[0] = (unsigned char)(seq >> 24);
    buf[1] = (unsigned char)(seq >> 16);
    buf[2] = (unsigned char)(seq >> 8);
    buf[3] = (unsigned char)seq;
    for (i = 4; i < len; i++) {
        buf[i] = filler_byte(seq, i);
    }
    return len;
}

static int is_known_peer(const NET_Node *node)
{
    int i;

    /* Nodes are canonical (one byte form per address), so bytes compare exactly; comparing
     * through the active backend would not work for nodes of a previous backend. */
    for (i = 0; i < g_known_count; i++) {
        if (memcmp(g_known_peers[i].bytes, node->bytes, sizeof node->bytes) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Account for one received datagram. */
static void take_datagram(const NET_Node *from, const unsigned char *buf, size_t len)
{
    uint32_t seq;
    size_t i;

    g_received++;
    if (!is_known_peer(from)) {
        g_foreign++;
    }
    if (len < 4) {
        g_corrupt++;
        return;
    }
    seq = ((uint32_t)buf[0] << 24) | ((uint32_t)buf[1] << 16) | ((uint32_t)buf[2] << 8) | buf[3];
    if (seq >= MAX_SEQ) {
        g_out_of_range++;
        return;
    }
    if (len != payload_len(seq)) {
        g_corrupt++;
        return;
    }
    for (i = 4; i < len; i++) {
        if (buf[i] != filler_byte(seq, i)) {
            g_corrupt++;
            return;
        }
    }
    if (g_seen[seq] < 255) {
        g_seen[seq]++;
    }
}

/* Receive everything waiting now. Returns the number received, or an error code (< -1). */
static int32_t receive_waiting(void)
{
    unsigned char buf[DATAGRAM_CAP];
    NET_Node from;
    int32_t total = 0;

    for (;;) {
        int32_t rc = NETs_ReceiveDatagram(&from, buf, sizeof buf);
        if (rc == 0) {
            return total;
        }
        if (rc < 0) {
            return rc;
        }
        take_datagram(&from, buf, (size_t)rc);
        total++;
    }
}

/* A number from the `status` console output: the digits after `key`, or -1. */
static long status_number(const char *key)
{
    char out[4096];
    const char *at;

    if (NET_ConsoleExec("status", out, sizeof out) != NET_OK) {
        return -1;
    }
    at = strstr(out, key);
    if (at == NULL) {
        return -1;
    }
    return strtol(at + strlen(key), NULL, 10);
}

static long queued_to_send(void)
{
    return status_number("waiting to send ");
}

static void cmd_exec(const char *line)
{
    char out[REPLY_CAP - 64];
    int32_t rc = NET_ConsoleExec(line, out, sizeof out);

    if (rc == NET_OK) {
        reply("ok %s", out);
    } else {
        reply("err %d %s", (int)rc, out);
    }
}

static void cmd_local(void)
{
    NET_Node node;
    char text[128];
    int32_t rc = NETs_LocalNode(&node);

    if (rc == NET_OK) {
        rc = NETs_PrintNode(&node, text, sizeof text);
    }
    if (rc < 0) {
        reply("err %d %s", (int)rc, NET_GetLastError());
    } else {
        reply("ok %s", text);
    }
}

static void cmd_peer(const char *text)
{
    NET_Node node;
    char printed[128];
    int32_t rc = NETs_ResolveNode(text, &node);

    if (rc == NET_OK) {
        rc = NETs_PrintNode(&node, printed, sizeof printed);
    }
    if (rc < 0) {
        reply("err %d %s", (int)rc, NET_GetLastError());
        return;
    }
    if (!is_known_peer(&node)) {
        if (g_known_count == MAX_PEERS) {
            reply("err 0 too many peers");
            return;
        }
        g_known_peers[g_known_count++] = node;
    }
    g_peer = node;
    g_have_peer = 1;
    reply("ok %s", printed);
}

static void cmd_send(unsigned long first, unsigned long end)
{
    unsigned char buf[DATAGRAM_CAP];
    unsigned long seq;

    if (!g_have_peer || first > end || end > MAX_SEQ) {
        reply("err 0 send needs a peer and FROM <= TO <= %d", MAX_SEQ);
        return;
    }
    for (seq = first; seq < end; seq++) {
        size_t len = make_payload((uint32_t)seq, buf);
        int32_t rc = NETs_SendDatagram(&g_peer, buf, len);
        if (rc != NET_OK) {
            reply("err %d at sequence number %lu: %s", (int)rc, seq, NET_GetLastError());
            return;
        }
        NETs_MaintainNet(); /* one game frame per datagram */
    }
    reply("ok sent %lu queued %ld", end - first, queued_to_send());
}

static void cmd_flush(long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    long queued;

    for (;;) {
        NETs_MaintainNet();
        queued = queued_to_send();
        if (queued == 0) {
            reply("ok");
            return;
        }
        if (now_ms() >= deadline) {
            reply("timeout queued %ld", queued);
            return;
        }
        sleep_ms(1);
    }
}

static void cmd_recv_until(unsigned long count, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;

    for (;;) {
        int32_t got;

        NETs_MaintainNet();
        got = receive_waiting();
        if (got < 0) {
            reply("err %d %s", (int)got, NET_GetLastError());
            return;
        }
        if (g_received >= count) {
            reply("ok received %lu", g_received);
            return;
        }
        if (now_ms() >= deadline) {
            reply("timeout received %lu", g_received);
            return;
        }
        if (got == 0) {
            sleep_ms(1);
        }
    }
}

static void cmd_check(unsigned long first, unsigned long end)
{
    char missing[256] = "";
    size_t used = 0;
    unsigned long seq, n_missing = 0, n_dup = 0, n_extra = 0;

    if (first > end || end > MAX_SEQ) {
        reply("err 0 check needs FROM <= TO <= %d", MAX_SEQ);
        return;
    }
    for (seq = 0; seq < MAX_SEQ; seq++) {
        int in_range = seq >= first && seq < end;
        if (in_range && g_seen[seq] == 0) {
            if (n_missing < FIRST_MISSING_SHOWN && used < sizeof missing - 16) {
                used += (size_t)snprintf(missing + used, sizeof missing - used, " %lu", seq);
            }
            n_missing++;
        } else if (in_range && g_seen[seq] > 1) {
            n_dup++;
        } else if (!in_range && g_seen[seq] > 0) {
            n_extra++;
        }
    }
    if (n_missing + n_dup + n_extra + g_corrupt + g_foreign + g_out_of_range == 0) {
        reply("ok");
    } else {
        reply("fail received=%lu missing=%lu duplicated=%lu unexpected=%lu corrupt=%lu "
              "foreign=%lu out_of_range=%lu first_missing:%s",
              g_received, n_missing, n_dup, n_extra, g_corrupt, g_foreign, g_out_of_range,
              missing);
    }
}

static void cmd_status(void)
{
    char out[REPLY_CAP - 64];
    int32_t rc = NET_ConsoleExec("status", out, sizeof out);

    if (rc == NET_OK) {
        reply("ok %s", out);
    } else {
        reply("err %d %s", (int)rc, out);
    }
}

/* Split "WORD REST" in place; returns REST (possibly ""). */
static char *split_word(char *line)
{
    char *space = strchr(line, ' ');

    if (space == NULL) {
        return line + strlen(line);
    }
    *space = '\0';
    return space + 1;
}

int main(void)
{
    char line[LINE_CAP];
    int32_t rc = NET_Init();

    if (rc != NET_OK) {
        reply("err %d NET_Init: %s", (int)rc, NET_GetLastError());
        return 1;
    }
    reply("ready abi %u %s", (unsigned)NET_GetAbiVersion(), BINDING);

    while (fgets(line, sizeof line, stdin) != NULL) {
        char *args;
        unsigned long a = 0, b = 0;

        line[strcspn(line, "\r\n")] = '\0';
        args = split_word(line);
        if (strcmp(line, "exec") == 0) {
            cmd_exec(args);
        } else if (strcmp(line, "local") == 0) {
            cmd_local();
        } else if (strcmp(line, "peer") == 0) {
            cmd_peer(args);
        } else if (strcmp(line, "send") == 0 && sscanf(args, "%lu %lu", &a, &b) == 2) {
            cmd_send(a, b);
        } else if (strcmp(line, "flush") == 0 && sscanf(args, "%lu", &a) == 1) {
            cmd_flush((long)a);
        } else if (strcmp(line, "recv_until") == 0 && sscanf(args, "%lu %lu", &a, &b) == 2) {
            cmd_recv_until(a, (long)b);
        } else if (strcmp(line, "check") == 0 && sscanf(args, "%lu %lu", &a, &b) == 2) {
            cmd_check(a, b);
        } else if (strcmp(line, "status") == 0) {
            cmd_status();
        } else if (strcmp(line, "quit") == 0) {
            break;
        } else {
            reply("err 0 unknown or malformed command '%s'", line);
        }
    }
    NET_Shutdown();
    reply("bye");
    return 0;
}
