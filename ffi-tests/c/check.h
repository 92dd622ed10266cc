/*
 * check.h: the small assertion helpers shared by the C test programs (api_errors, bad_backends,
 * jump_table, contract_pair, rejoin_pair, ...), the name of an event type as they print it, and
 * a field-by-field comparison of two events.
 * Every check prints one line ("ok" or "FAIL"), failures are counted, and check_finish() prints
 * the totals and gives the exit status. Define _POSIX_C_SOURCE 200809L
 * before including this header (it uses clock_gettime and nanosleep).
 */

#ifndef PARSEC_NET_FFI_TESTS_CHECK_H
#define PARSEC_NET_FFI_TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parsec_net.h"

static int check_total;
static int check_failed;

static inline void check_record(int ok, const char *what, const char *detail)
{
    check_total++;
    if (!ok) {
        check_failed++;
    }
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail[0] != '\0' ? ": " : "", detail);
    fflush(stdout);
}

/* Whether `text` is a non-empty single line. */
static inline int is_one_line(const char *text)
{
    return text != NULL && text[0] != '\0' && strchr(text, '\n') == NULL &&
           strchr(text, '\r') == NULL;
}

/* Expect a call to have returned `want`. For an error code (< 0) NET_GetLastError() must also
 * be a non-empty single line. -1 is never an error code, so it is never expected as one. */
static inline void expect_code(const char *what, int32_t got, int32_t want)
{
    char detail[600];
    int ok = got == want;

    if (want < 0) {
        const char *message = NET_GetLastError();
        ok = ok && want != -1 && is_one_line(message);
        snprintf(detail, sizeof detail, "returned %d (want %d), last error \"%s\"", (int)got,
                 (int)want, message != NULL ? message : "(NULL)");
    } else {
        snprintf(detail, sizeof detail, "returned %d (want %d)", (int)got, (int)want);
    }
    check_record(ok, what, detail);
}

/* Expect an error code whose message (NET_GetLastError) contains `needle`. */
static inline void expect_error_mentioning(const char *what, int32_t got, int32_t want,
                                           const char *needle)
{
    char detail[700];
    const char *message = NET_GetLastError();
    int ok = got == want && want < -1 && is_one_line(message) && strstr(message, needle) != NULL;

    snprintf(detail, sizeof detail, "returned %d (want %d), last error \"%s\" (want \"%s\" in it)",
             (int)got, (int)want, message != NULL ? message : "(NULL)", needle);
    check_record(ok, what, detail);
}

static inline void expect_true(const char *what, int condition, const char *detail)
{
    check_record(condition, what, detail != NULL ? detail : "");
}

/* Print the totals; the exit status of the program. */
static inline int check_finish(const char *program)
{
    printf("%s: %d checks, %d failed\n", program, check_total, check_failed);
    fflush(stdout);
    return check_failed == 0 && check_total > 0 ? 0 : 1;
}

/* The name of a NET_EVENT_* type as the programs print it (NET_EVENT_PLAYER_JOINED:
 * "PLAYER_JOINED"), "?" for a type it does not know. */
static inline const char *check_event_name(uint32_t type)
{
    static const char *const names[] = {
        "?",           "CONNECTED",     "DISCONNECTED",  "PLAYER_CONNECTED", "PLAYER_DISCONNECTED",
        "PLAYER_JOINED", "PLAYER_UNJOINED", "PLAYER_NAME", "TEXT",          "CREATE_OBJECT",
        "CREATE_LASER", "CREATE_MISSILE", "CREATE_EXTRA", "KILL_OBJECT",    "PARTICLE_OBJECT",
        "CUSTOM",      "ERROR",         "SERVER_LIST",
    };

    return type < sizeof names / sizeof names[0] ? names[type] : "?";
}

static inline long long check_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void check_sleep_ms(long ms)
{
    struct timespec ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* Compare every documented field of `got` with `want` (whose unused fields are zero), bit for
 * bit for the floats; the text must be NUL-terminated. Describe the first difference in `why`.
 * (contract_pair, three_games) */
static inline int check_same_event(const NET_Event *got, const NET_Event *want, char *why,
                                   size_t why_len)
{
#define CHECK_FIELD(f)                                                                             \
    if (memcmp(&got->f, &want->f, sizeof got->f) != 0) {                                           \
        snprintf(why, why_len, "field " #f " differs");                                           \
        return 0;                                                                                  \
    }
    CHECK_FIELD(type)
    CHECK_FIELD(player_id)
    CHECK_FIELD(object_id)
    CHECK_FIELD(target_id)
    CHECK_FIELD(flags)
    CHECK_FIELD(object_class)
    CHECK_FIELD(custom_type)
    CHECK_FIELD(pos)
    CHECK_FIELD(dir)
    CHECK_FIELD(orient)
    CHECK_FIELD(list_id)
    CHECK_FIELD(data_len)
#undef CHECK_FIELD
    if (memchr(got->text, '\0', sizeof got->text) == NULL) {
        snprintf(why, why_len, "text not NUL-terminated");
        return 0;
    }
    if (strcmp(got->text, want->text) != 0) {
        snprintf(why, why_len, "text \"%.60s\" instead of \"%.60s\"", got->text, want->text);
        return 0;
    }
    if (memcmp(got->data, want->data, sizeof got->data) != 0) {
        snprintf(why, why_len, "data differs");
        return 0;
    }
    snprintf(why, why_len, "every field as sent");
    return 1;
}

/* dst[0..3] = a, b, c. */
static inline void check_set3(float *dst, float a, float b, float c)
{
    dst[0] = a;
    dst[1] = b;
    dst[2] = c;
}

/* Set the UDP backend's options so the socket opens on 127.0.0.1, IPv4 only, on a port the
 * system chooses (tests run side by side), checking each console line. */
static inline void use_udp_on_loopback(void)
{
    static const char *const lines[] = {"net.udp.bind 127.0.0.1", "net.udp.ipv6 0", "net.port 0"};
    char out[512];
    size_t i;

    for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        expect_code(lines[i], NET_ConsoleExec(lines[i], out, sizeof out), NET_OK);
    }
}

/* Send `len` bytes of `data` to this instance's own node. Returns 1 if the library took it;
 * explains a failure in `why`. */
static inline int send_to_self(const unsigned char *data, size_t len, char *why, size_t why_len)
{
    NET_Node me;
    int32_t rc = NETs_LocalNode(&me);

    if (rc != NET_OK) {
        snprintf(why, why_len, "NETs_LocalNode returned %d: %s", (int)rc, NET_GetLastError());
        return 0;
    }
    rc = NETs_SendDatagram(&me, data, len);
    if (rc != NET_OK) {
        snprintf(why, why_len, "NETs_SendDatagram returned %d: %s", (int)rc, NET_GetLastError());
        return 0;
    }
    snprintf(why, why_len, "the library took the %zu-byte datagram", len);
    return 1;
}

/* Run frames for up to `timeout_ms` until a datagram arrives; 1 if it holds exactly `data`.
 * Explains the outcome in `why`. */
static inline int receive_expected(const unsigned char *data, size_t len, long timeout_ms,
                                   char *why, size_t why_len)
{
    NET_Node from;
    unsigned char buf[2048];
    long long deadline = check_now_ms() + timeout_ms;

    while (check_now_ms() < deadline) {
        int32_t rc;

        NETs_MaintainNet();
        rc = NETs_ReceiveDatagram(&from, buf, sizeof buf);
        if (rc < 0) {
            snprintf(why, why_len, "NETs_ReceiveDatagram returned %d: %s", (int)rc,
                     NET_GetLastError());
            return 0;
        }
        if (rc > 0) {
            if ((size_t)rc == len && memcmp(buf, data, len) == 0) {
                snprintf(why, why_len, "the %zu-byte datagram arrived", len);
                return 1;
            }
            snprintf(why, why_len, "an unexpected %d-byte datagram arrived", (int)rc);
            return 0;
        }
        check_sleep_ms(1);
    }
    snprintf(why, why_len, "nothing arrived within %ld ms", timeout_ms);
    return 0;
}

/* Send `data` to ourselves and receive it back within `timeout_ms`. */
static inline int self_echo(const unsigned char *data, size_t len, long timeout_ms, char *why,
                            size_t why_len)
{
    return send_to_self(data, len, why, why_len) &&
           receive_expected(data, len, timeout_ms, why, why_len);
}

/* Queue the remote event `e` with the NET_RmEv* call of its type, `pos` as its position (the
 * origin of a particle); the call's return code. (contract_pair, three_games) */
static inline int32_t check_send_event(const NET_Event *e, const float *pos)
{
    switch (e->type) {
    case NET_EVENT_CREATE_OBJECT:
        return NET_RmEvCreateObject(e->object_id, e->object_class, pos, e->orient, e->flags);
    case NET_EVENT_CREATE_LASER:
        return NET_RmEvCreateLaser(e->object_id, e->object_class, pos, e->dir);
    case NET_EVENT_CREATE_MISSILE:
        return NET_RmEvCreateMissile(e->object_id, e->object_class, pos, e->dir, e->target_id);
    case NET_EVENT_CREATE_EXTRA:
        return NET_RmEvCreateExtra(e->object_id, e->object_class, pos);
    case NET_EVENT_PARTICLE_OBJECT:
        return NET_RmEvParticleObject(e->object_class, pos);
    case NET_EVENT_KILL_OBJECT:
        return NET_RmEvKillObject(e->object_id, e->list_id);
    case NET_EVENT_TEXT:
        return NET_RmEvSendText(e->text);
    case NET_EVENT_PLAYER_NAME:
        return NET_RmEvPlayerName(e->text);
    case NET_EVENT_CUSTOM:
        return NET_RmEvCustom(e->custom_type, e->data_len > 0 ? e->data : NULL, e->data_len,
                              e->flags);
    default:
        return NET_ERR_INTERNAL;
    }
}

/* The options every game program takes: --name NAME --peer HOST:PORT [--exec LINE]...
 * [--duration MS]. (contract_pair, three_games) */
#define CHECK_MAX_EXECS 16

struct check_game_args {
    const char *name;
    const char *peer;
    const char *execs[CHECK_MAX_EXECS];
    int exec_count;
    long duration;
};

/* If argv[*i] is one of the common options, take it (and its value) and return 1. */
static inline int check_game_arg(struct check_game_args *a, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        return 0;
    }
    if (strcmp(argv[*i], "--name") == 0) {
        a->name = argv[++*i];
    } else if (strcmp(argv[*i], "--peer") == 0) {
        a->peer = argv[++*i];
    } else if (strcmp(argv[*i], "--exec") == 0 && a->exec_count < CHECK_MAX_EXECS) {
        a->execs[a->exec_count++] = argv[++*i];
    } else if (strcmp(argv[*i], "--duration") == 0) {
        a->duration = atol(argv[++*i]);
    } else {
        return 0;
    }
    return 1;
}

/* Whether --name and --peer were given; if not, `program` says so on standard error. */
static inline int check_game_args_given(const struct check_game_args *a, const char *program)
{
    if (a->name == NULL || a->peer == NULL) {
        fprintf(stderr, "%s: --name and --peer are required\n", program);
        return 0;
    }
    return 1;
}

/* NET_Init, then each --exec line through the console, checking each. */
static inline void check_init_with_execs(const struct check_game_args *a)
{
    char line[300], out[1024];
    int i;

    expect_code("NET_Init()", NET_Init(), NET_OK);
    for (i = 0; i < a->exec_count; i++) {
        int32_t rc = NET_ConsoleExec(a->execs[i], out, sizeof out);

        snprintf(line, sizeof line, "console \"%.100s\": %.150s", a->execs[i], out);
        expect_code(line, rc, NET_OK);
    }
}

/* "connect HOST:PORT" through the console, checked. */
static inline void check_connect(const char *peer)
{
    char line[300], out[1024];

    snprintf(line, sizeof line, "connect %s", peer);
    expect_code(line, NET_ConsoleExec(line, out, sizeof out), NET_OK);
}

#endif /* PARSEC_NET_FFI_TESTS_CHECK_H */
