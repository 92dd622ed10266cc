/*
 * api_chaos.c: a seeded "random game". For --steps steps it picks, from a PRNG seeded with
 * --seed, one call of the C contract (SPEC 4) or one console line (SPEC 5) with valid and
 * invalid arguments, in any order and any state: NET_Init/NET_Shutdown (also twice), every NETs_
 * call through the jump table (and now and then the exported function), the game-code interface
 * with good, empty, overlong, non-finite and NULL arguments and impossible ids, every NET_RmEv*,
 * and console lines of every command (switching protocol and backend, recording and playing a
 * demo, connecting to the --peer game, the --slot slotserver and the --game gameserver) with
 * `out` buffers of 0, 1, small and large capacity, followed by guard bytes.
 *
 * Checked after every call: the return code is one c-api.md allows for that call in the state
 * the program knows (an argument error the same in every state, before NET_Init
 * NET_ERR_NOT_INITIALIZED), -1 never, a failure leaves a one-line NET_GetLastError(); a console
 * reply is NUL-terminated inside out_len, valid UTF-8, and nothing is written past out_len (or at
 * all with out_len 0); an event NET_PollEvent writes has a known type, a player id in range, a
 * NUL-terminated UTF-8 text and data_len <= 256; a failed call leaves its output untouched. At
 * the end: `stop`, `disconnect`, frames, and `status` must say "not connected".
 *
 * The choices depend only on the seed (never on what the library answered), so a seed replays the
 * same calls; the network's timing still varies. A failure prints "FAIL seed S step K: ..." with
 * the last calls before it; a call that does not return within the watchdog prints "HANG seed S
 * step K: CALL" and exits with status 3. --trace prints every call.
 *
 * Usage: api_chaos --seed S --steps N --port P --peer HOST:PORT --slot HOST:PORT
 *                  --game HOST:PORT --demo FILE [--closed PORT] [--trace]
 */

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "parsec_net.h"

#define GUARD 32
#define GUARD_BYTE 0xA5
#define WATCHDOG_S 30
#define HISTORY 24
#define SLOTS 16
#define MAX_LINE 1024

/* Bit sets of allowed return codes: bit 0 NET_OK, bit 1 any positive value, bit -code for an
 * error code (bit 1 is free because -1 is never an error code). */
#define OK_BIT (1u << 0)
#define POS_BIT (1u << 1)
#define E(code) (1u << (unsigned)(-(code)))
#define ANY_ERROR (0x7FFFCu) /* -2 .. -18 */

static unsigned long long seed;
static long step;
static int trace;
static int inited;
static int failures;
static long checks;
/* What the run reached: events by type, remote events the library took. */
static long events_seen[NET_EVENT_SERVER_LIST + 1];
static long rmev_taken;

static const char *opt_peers[3], *opt_slot, *opt_game, *opt_demo;
static int opt_peer_count;
/* Steps left of a calm phase (a connect, then playing without switches). */
static long calm_left;
static int opt_port, opt_closed = 1;

/* The call being made and the last ones before it. */
static char current[400];
static char history[HISTORY][400];
static long history_step[HISTORY];
static char hang_message[600];
static size_t hang_len;

static void forget_players(void);
/* A demo is shown (`play` until `stop`, or until the DISCONNECTED of the live game it was
 * played in, which ends its view). */
static int demo_shown;

/* ---- PRNG (splitmix64): the only source of choices ---- */
static uint64_t rng;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
    return n == 0 ? 0 : (uint32_t)(rnd() % n);
}

/* The extra actions (`extra_action`) draw from a stream of their own, so a seed still makes
 * every call it made before they were added, in the same order, with the extras in between. */
static uint64_t rng2;

static uint32_t below2(uint32_t n)
{
    uint64_t z = (rng2 += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return n == 0 ? 0 : (uint32_t)(z % n);
}

static int chance2(uint32_t percent)
{
    return below2(100) < percent;
}

/* Frames left that skip NETs_MaintainNet (the game is busy: a loading screen, a debugger). */
static long hold_left;
/* What is left of the time a run may stall without any call (ms). */
static long stall_budget_ms;

static int chance(uint32_t percent)
{
    return below(100) < percent;
}

/* ---- reporting ---- */

static void on_alarm(int sig)
{
    ssize_t ignored;

    (void)sig;
    ignored = write(STDOUT_FILENO, hang_message, hang_len);
    (void)ignored;
    _exit(3);
}

static void begin(const char *fmt, ...)
{
    va_list ap;
    int slot = (int)(step % HISTORY);

    va_start(ap, fmt);
    vsnprintf(current, sizeof current, fmt, ap);
    va_end(ap);
    memcpy(history[slot], current, sizeof current);
    history_step[slot] = step;
    snprintf(hang_message, sizeof hang_message,
             "HANG seed %llu step %ld: %s did not return within %d s\n", seed, step, current,
             WATCHDOG_S);
    hang_len = strlen(hang_message);
    if (trace) {
        printf("step %ld: %s\n", step, current);
        fflush(stdout);
    }
    alarm(WATCHDOG_S);
}

static void fail(const char *fmt, ...)
{
    char detail[1200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    failures++;
    printf("FAIL seed %llu step %ld: %s: %s\n", seed, step, current, detail);
    if (failures == 1) {
        long s;
        printf("  the calls before it:\n");
        for (s = step - HISTORY + 1; s <= step; s++) {
            if (s >= 0 && history_step[s % HISTORY] == s) {
                printf("  step %ld: %s\n", s, history[s % HISTORY]);
            }
        }
    }
    fflush(stdout);
}

static void check(int ok, const char *fmt, ...)
{
    char detail[1200];
    va_list ap;

    checks++;
    if (ok) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    fail("%s", detail);
}

static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = s[i];
        size_t len, k;
        uint32_t cp;

        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + len > n) {
            return 0;
        }
        for (k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return 0;
        }
        i += len;
    }
    return 1;
}

/* The return code `rc` of the current call must be in `allowed`; a failure needs a one-line
 * NET_GetLastError(). */
static void check_rc(int32_t rc, uint32_t allowed)
{
    int in;

    if (rc == 0) {
        in = (allowed & OK_BIT) != 0;
    } else if (rc > 0) {
        in = (allowed & POS_BIT) != 0;
    } else if (rc <= -2 && rc >= -18) {
        in = (allowed & E(rc)) != 0;
    } else {
        in = 0;
    }
    check(in, "returned %d (\"%s\"), not one of the codes allowed here (set 0x%x, %s)", (int)rc,
          rc < 0 ? NET_GetLastError() : "", (unsigned)allowed,
          inited ? "initialized" : "not initialized");
    if (rc < 0) {
        const char *message = NET_GetLastError();
        check(is_one_line(message), "returned %d but NET_GetLastError() is \"%s\"", (int)rc,
              message != NULL ? message : "(NULL)");
    }
}

/* The codes allowed for a call whose arguments are valid: `when_inited` or, before NET_Init,
 * NET_ERR_NOT_INITIALIZED. */
static uint32_t state_codes(uint32_t when_inited)
{
    return inited ? when_inited : E(NET_ERR_NOT_INITIALIZED);
}

/* ---- random values ---- */

static float random_float(int allow_bad)
{
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e30f, -1e-30f, 3.5f};

    if (allow_bad && chance(8)) {
        switch (below(3)) {
        case 0:
            return (float)NAN;
        case 1:
            return (float)INFINITY;
        default:
            return -(float)INFINITY;
        }
    }
    if (chance(20)) {
        return special[below(sizeof special / sizeof special[0])];
    }
    return (float)((double)below(200000) / 100.0 - 1000.0);
}

/* Fill n floats; with `defect` one of them is NaN or infinite. */
static void random_floats(float *v, int n, int defect)
{
    int i;

    for (i = 0; i < n; i++) {
        v[i] = random_float(0);
    }
    if (defect) {
        v[below((uint32_t)n)] = chance(50) ? (float)NAN : (float)INFINITY;
    }
}

/* A name of `len` bytes (printable ASCII, sometimes a two-byte UTF-8 letter when it fits). */
static void random_name(char *buf, size_t len)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
    size_t i = 0;

    while (i < len) {
        if (len - i >= 2 && chance(5)) {
            buf[i++] = (char)0xC3; /* U+00E9 */
            buf[i++] = (char)0xA9;
        } else {
            buf[i++] = letters[below(sizeof letters - 1)];
        }
    }
    buf[len] = '\0';
}

/* The expected error of a name argument (NET_SetPlayerName, NET_RmEvPlayerName) or 0 if valid;
 * writes the name (or sets *is_null). */
static int32_t pick_name(char *buf, size_t cap, int *is_null)
{
    uint32_t k = below(100);

    *is_null = 0;
    if (k < 5) {
        *is_null = 1;
        return NET_ERR_INVALID_ARGUMENT;
    }
    if (k < 10) {
        buf[0] = '\0';
        return NET_ERR_INVALID_ARGUMENT;
    }
    if (k < 18) {
        random_name(buf, 32 + below(40));
        return NET_ERR_TOO_LARGE;
    }
    if (k < 22) {
        random_name(buf, 5);
        buf[4] = (char)0xFF; /* not UTF-8 */
        return NET_ERR_INVALID_ARGUMENT;
    }
    if (k < 26) {
        random_name(buf, 5);
        buf[4] = '\n';
        return NET_ERR_INVALID_ARGUMENT;
    }
    if (k < 36) {
        random_name(buf, 31);
        return 0;
    }
    (void)cap;
    random_name(buf, 1 + below(12));
    if (chance(10)) {
        buf[0] = ' '; /* fine locally, refused by a server */
        if (((unsigned char)buf[1] & 0xC0) == 0x80) {
            buf[1] = 'x'; /* the rest of a two-byte letter */
        }
    }
    return 0;
}

/* ---- the console ---- */

static const char *const commands[] = {
    "help", "status", "players", "net.subsys", "net.api", "net.server", "net.port", "connect",
    "disconnect", "join", "unjoin", "name", "say", "net.master", "servers", "record", "play",
    "stop", "net.sendfreq", "net.rate",
};

/* Expected outcome of a console line: exact code, or a set. */
struct expect_line {
    int exact;   /* 1: only `code` */
    int32_t code;
    uint32_t set; /* when !exact, with inited */
    int defect;  /* refused at the boundary in every state (code is the error) */
};

static void random_text(char *buf, size_t len)
{
    static const char chars[] = "abc xyz ,.!?0123456789";
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = chars[below(sizeof chars - 1)];
    }
    buf[len] = '\0';
}

static const char *random_case(const char *word, char *buf, size_t cap)
{
    size_t i;

    snprintf(buf, cap, "%s", word);
    if (chance(15)) {
        for (i = 0; buf[i] != '\0'; i++) {
            if (buf[i] >= 'a' && buf[i] <= 'z' && chance(50)) {
                buf[i] = (char)(buf[i] - 'a' + 'A');
            }
        }
    }
    return buf;
}

static const char *random_peer(void)
{
    return opt_peers[below((uint32_t)opt_peer_count)];
}

/* Write a random console line into `line` (capacity > MAX_LINE + 64) and what it must give. */
static void pick_line(char *line, struct expect_line *e)
{
    char arg[400], word[64];
    const char *server;
    uint32_t k = below(100);

    e->exact = 0;
    e->code = 0;
    e->set = OK_BIT | ANY_ERROR;
    e->defect = 0;
    arg[0] = '\0';

    if (k < 3) { /* overlong */
        size_t n = MAX_LINE + 1 + below(200);
        memcpy(line, "say ", 4);
        memset(line + 4, 'x', n - 4);
        line[n] = '\0';
        e->exact = 1;
        e->code = NET_ERR_TOO_LARGE;
        e->defect = 1;
        return;
    }
    if (k < 6) { /* not UTF-8 */
        static const char *const bad[] = {"say \xff\xfe", "status\xc3", "name ab\x80",
                                          "\xe2\x82 connect", "net.server \xf5\x80\x80\x80"};
        strcpy(line, bad[below(5)]);
        e->exact = 1;
        e->code = NET_ERR_INVALID_ARGUMENT;
        e->defect = 1;
        return;
    }
    if (k < 8) { /* a control character */
        static const char *const bad[] = {"say a\x01z", "status\n", "name x\x1b[2J", "say \r",
                                          "connect\x7f"};
        strcpy(line, bad[below(5)]);
        e->exact = 1;
        e->code = NET_ERR_INVALID_ARGUMENT;
        return;
    }
    if (k < 10) { /* exactly 1024 bytes of an unknown command */
        memset(line, 'q', MAX_LINE);
        line[MAX_LINE] = '\0';
        e->exact = 1;
        e->code = NET_ERR_UNKNOWN_COMMAND;
        return;
    }
    if (k < 13) {
        static const char *const unknown[] = {"stauts", "frobnicate", "conect", "net.bogus",
                                              "wait 10", "quit"};
        strcpy(line, unknown[below(6)]);
        e->exact = 1;
        e->code = NET_ERR_UNKNOWN_COMMAND;
        return;
    }
    if (k < 15) {
        static const char *const blank[] = {"", "   ", " \t "};
        strcpy(line, blank[below(3)]);
        e->exact = 1;
        e->code = NET_OK;
        return;
    }

    switch (below(22)) {
    case 0:
        if (chance(30)) {
            snprintf(line, MAX_LINE, "%s", random_case("help", word, sizeof word));
            e->exact = 1;
        } else if (chance(80)) {
            snprintf(line, MAX_LINE, "help %s",
                     commands[below(sizeof commands / sizeof commands[0])]);
            e->exact = 1;
        } else {
            strcpy(line, "help nosuchthing");
            e->exact = 1;
            e->code = NET_ERR_UNKNOWN_COMMAND;
        }
        break;
    case 1:
        strcpy(line, chance(90) ? "status" : "STATUS");
        e->exact = 1;
        break;
    case 2:
        strcpy(line, chance(85) ? "players" : "players x");
        e->exact = 1;
        e->code = line[7] == '\0' ? NET_OK : NET_ERR_INVALID_ARGUMENT;
        break;
    case 3:
    case 4: {
        static const char *const subs[] = {"peer", "slotserver", "gameserver"};
        uint32_t s = below(10);
        if (s < 8) {
            snprintf(line, MAX_LINE, "net.subsys %s",
                     random_case(subs[s % 3], word, sizeof word));
            e->set = OK_BIT | E(NET_ERR_UNSUPPORTED) | E(NET_ERR_INVALID_ARGUMENT) |
                     E(NET_ERR_STATE) | E(NET_ERR_NO_BACKEND);
        } else if (s == 8) {
            strcpy(line, chance(50) ? "net.subsys" : "net.subsys bogus");
        } else {
            strcpy(line, "net.subsys peer peer");
        }
        break;
    }
    case 5: {
        static const char *const apis[] = {"udp", "UDP", "no_such_backend_xyz", "./missing.so",
                                           "..", "bad name!", ""};
        snprintf(line, MAX_LINE, "net.api %s", apis[below(7)]);
        if (chance(60)) {
            strcpy(line, "net.api udp");
        }
        break;
    }
    case 6: {
        static const char *const bad[] = {"256.1.1.1", "a/b", "[name]", "-x-", ""};
        server = chance(50) ? opt_slot : opt_game;
        if (chance(75)) {
            snprintf(line, MAX_LINE, "net.server %s", server);
        } else {
            snprintf(line, MAX_LINE, "net.server %s", bad[below(5)]);
        }
        break;
    }
    case 7: {
        static const char *const bad[] = {"70000", "-1", "x", "1 2", ""};
        if (chance(60)) {
            snprintf(line, MAX_LINE, "net.port %d", opt_port);
        } else {
            snprintf(line, MAX_LINE, "net.port %s", bad[below(5)]);
        }
        break;
    }
    case 8:
    case 9: {
        uint32_t c = below(7);
        if (c == 0) {
            strcpy(line, "connect");
        } else if (c == 1) {
            snprintf(line, MAX_LINE, "connect %s", random_peer());
        } else if (c == 2) {
            snprintf(line, MAX_LINE, "connect %s", opt_slot);
        } else if (c == 3) {
            snprintf(line, MAX_LINE, "connect %s", opt_game);
        } else if (c == 4) {
            snprintf(line, MAX_LINE, "connect 127.0.0.1:%d", opt_closed);
        } else if (c == 5) {
            strcpy(line, chance(50) ? "connect 256.1.1.1" : "connect a/b");
        } else {
            snprintf(line, MAX_LINE, "connect %s x", random_peer());
        }
        break;
    }
    case 10:
        strcpy(line, chance(90) ? "disconnect" : "disconnect now");
        break;
    case 11:
        strcpy(line, chance(90) ? "join" : "join x");
        break;
    case 12: {
        static const char *const flags[] = {"", " 0", " 1", " 255", " 256", " -1", " x", " 1 2"};
        snprintf(line, MAX_LINE, "unjoin%s", flags[below(8)]);
        break;
    }
    case 13: {
        int is_null;
        pick_name(arg, sizeof arg, &is_null);
        if (is_null || arg[0] == '\n') {
            arg[0] = '\0';
        }
        /* a line break or a bad byte in the name makes the whole line bad: keep it printable */
        {
            size_t i;
            int ascii = !utf8_valid((const unsigned char *)arg, strlen(arg));
            for (i = 0; arg[i] != '\0'; i++) {
                if (arg[i] == '\n' || (ascii && (unsigned char)arg[i] >= 0x80)) {
                    arg[i] = 'n';
                }
            }
        }
        if (chance(5)) {
            strcpy(arg, "a os: b");
        }
        snprintf(line, MAX_LINE, "name %s", arg);
        break;
    }
    case 14: {
        size_t n = chance(10) ? 255 + below(3) : below(40);
        random_text(arg, n);
        snprintf(line, MAX_LINE, "say %s", arg);
        break;
    }
    case 15: {
        uint32_t c = below(5);
        if (c == 0) {
            snprintf(line, MAX_LINE, "net.master 127.0.0.1:%d", opt_closed);
        } else if (c == 1) {
            strcpy(line, chance(50) ? "net.master clear" : "net.master CLEAR");
        } else if (c == 2) {
            strcpy(line, "net.master 127.0.0.1:1,127.0.0.2:1,127.0.0.3:1,127.0.0.4:1");
        } else if (c == 3) {
            strcpy(line, "net.master");
        } else {
            strcpy(line, "net.master 256.1.1.1");
        }
        break;
    }
    case 16:
        strcpy(line, "servers");
        break;
    case 17: {
        uint32_t c = below(4);
        if (c < 3) {
            snprintf(line, MAX_LINE, "record %s", opt_demo);
        } else {
            strcpy(line, chance(50) ? "record /nonexistent-dir/x.demo" : "record");
        }
        break;
    }
    case 18: {
        uint32_t c = below(4);
        if (c < 3) {
            snprintf(line, MAX_LINE, "play %s", opt_demo);
        } else {
            strcpy(line, chance(50) ? "play /nonexistent-dir/x.demo" : "play");
        }
        break;
    }
    case 19:
        strcpy(line, chance(90) ? "stop" : "stop x");
        break;
    case 20: {
        static const char *const hz[] = {"5", "20", "60", "4", "61", "x", "", "5 6", "-3"};
        snprintf(line, MAX_LINE, "net.sendfreq %s", hz[below(9)]);
        break;
    }
    default: {
        static const char *const rate[] = {"0", "2000", "100000", "-1", "x", "", "1 2"};
        snprintf(line, MAX_LINE, "net.rate %s", rate[below(7)]);
        break;
    }
    }
    /* a rare mutation: a byte changed or the line cut anywhere */
    if (chance(3)) {
        size_t n = strlen(line);
        if (n > 0) {
            size_t at = below((uint32_t)n);
            if (chance(50)) {
                line[at] = (char)(0x80 + below(0x80));
            } else {
                line[at] = '\0';
            }
            e->exact = 0;
            e->set = OK_BIT | ANY_ERROR;
            e->defect = 2; /* maybe refused at the boundary */
        }
    }
}

/* After a `stop` that succeeded: nothing is recorded or shown any more (a recording and a shown
 * demo never go together: `record` is refused while a finished demo is shown). */
static void demo_off_check(void)
{
    static char out[65536];

    if (NET_ConsoleExec("status", out, sizeof out) == NET_OK) {
        const char *demo = strstr(out, "demo ");
        check(strstr(out, "demo off") != NULL,
              "after a `stop` that succeeded status says \"%.60s\", not \"demo off\"",
              demo != NULL ? demo : out);
        demo_shown = 0;
    }
}

/* One NET_ConsoleExec with a random out buffer; returns the reply (in `reply`, when it fitted). */
static int32_t console_line(const char *line, const struct expect_line *e, char *reply,
                            size_t reply_cap)
{
    static const size_t sizes[] = {0, 1, 2, 3, 5, 16, 64, 300, 4096, 65536};
    size_t out_len = sizes[below(sizeof sizes / sizeof sizes[0])];
    int null_out = out_len == 0 && chance(50);
    int null_with_len = !null_out && out_len > 0 && chance(2);
    unsigned char *buf = malloc(out_len + GUARD);
    uint32_t allowed;
    int32_t rc;
    size_t i;
    char shown[80];

    if (buf == NULL) {
        fail("out of memory");
        return NET_ERR_INTERNAL;
    }
    memset(buf, GUARD_BYTE, out_len + GUARD);
    snprintf(shown, sizeof shown, "%.60s%s", line, strlen(line) > 60 ? "..." : "");
    for (i = 0; shown[i] != '\0'; i++) {
        if ((unsigned char)shown[i] < 0x20 || (unsigned char)shown[i] >= 0x7F) {
            shown[i] = '?';
        }
    }
    begin("NET_ConsoleExec(\"%s\" (%zu bytes), %s, %zu)", shown, strlen(line),
          null_out || null_with_len ? "NULL" : "out", out_len);
    rc = NET_ConsoleExec(line, null_out || null_with_len ? NULL : (char *)buf, out_len);

    if (null_with_len) {
        allowed = E(NET_ERR_INVALID_ARGUMENT);
    } else if (e->defect == 1) {
        allowed = E(e->code);
    } else if (e->defect == 2) {
        allowed = inited ? e->set
                         : E(NET_ERR_NOT_INITIALIZED) | E(NET_ERR_INVALID_ARGUMENT) |
                               E(NET_ERR_TOO_LARGE) | E(NET_ERR_UNKNOWN_COMMAND) | OK_BIT;
    } else if (!inited) {
        /* a line with a control character is refused as such in every state */
        allowed = E(NET_ERR_NOT_INITIALIZED);
        if (e->exact && e->code == NET_ERR_INVALID_ARGUMENT) {
            allowed |= E(NET_ERR_INVALID_ARGUMENT);
        }
        if (e->exact && e->code == NET_OK && line[strspn(line, " \t")] == '\0') {
            allowed |= OK_BIT; /* a blank line does nothing */
        }
    } else if (e->exact) {
        allowed = e->code == 0 ? OK_BIT : E(e->code);
    } else {
        allowed = e->set;
    }
    check_rc(rc, allowed);
    if (rc >= 0 && strncmp(line, "play ", 5) == 0) {
        /* the game polls what it had not polled of the live game and the DISCONNECTED of
         * leaving it (or of the ended demo still shown) first, then only the demo: the events
         * say when the players change */
        demo_shown = 1;
    }
    if (rc >= 0 && strncmp(line, "stop", 4) == 0) {
        demo_off_check();
    }

    if (!null_out && !null_with_len) {
        for (i = 0; i < GUARD; i++) {
            if (buf[out_len + i] != GUARD_BYTE) {
                fail("wrote byte %zu past out_len %zu", i, out_len);
                break;
            }
        }
        if (out_len > 0) {
            unsigned char *nul = memchr(buf, 0, out_len);
            check(nul != NULL, "the reply is not NUL-terminated inside out_len %zu", out_len);
            if (nul != NULL) {
                check(utf8_valid(buf, (size_t)(nul - buf)),
                      "the reply (cut to %zu bytes) is not valid UTF-8", out_len);
                if (rc < 0 && (size_t)(nul - buf) + 1 < out_len) {
                    const char *message = NET_GetLastError();
                    check(message != NULL && strcmp((const char *)buf, message) == 0,
                          "the error reply \"%.200s\" is not NET_GetLastError() \"%.200s\"",
                          (const char *)buf, message != NULL ? message : "(NULL)");
                }
                if (reply != NULL && reply_cap > 0) {
                    snprintf(reply, reply_cap, "%s", (const char *)buf);
                }
            }
        }
    }
    free(buf);
    return rc;
}

/* A console line that must succeed (setup, final checks); its reply in `reply`. */
static int32_t console_may(const char *line, uint32_t allowed)
{
    char out[4096];
    int32_t rc;

    begin("NET_ConsoleExec(\"%s\") (end)", line);
    rc = NET_ConsoleExec(line, out, sizeof out);
    check_rc(rc, allowed);
    return rc;
}

static int32_t console_must(const char *line, char *reply, size_t reply_cap)
{
    static char out[65536];
    int32_t rc;

    begin("NET_ConsoleExec(\"%s\") (setup)", line);
    memset(out, 0, sizeof out);
    rc = NET_ConsoleExec(line, out, sizeof out);
    check(rc >= 0, "returned %d: %s", (int)rc, out);
    if (reply != NULL) {
        snprintf(reply, reply_cap, "%s", out);
    }
    return rc;
}

/* After a NET_Init that created the instance: everything on loopback, fast peer timing. */
static void setup(void)
{
    char line[200];

    console_must("net.udp.bind 127.0.0.1", NULL, 0);
    console_must("net.udp.ipv6 0", NULL, 0);
    console_must("net.udp.broadcast 127.255.255.255", NULL, 0);
    snprintf(line, sizeof line, "net.port %d", opt_port);
    console_must(line, NULL, 0);
    console_must("net.peer.connect_tries 3", NULL, 0);
    console_must("net.peer.connect_interval 50", NULL, 0);
    console_must("net.peer.slot_interval 80", NULL, 0);
    console_must("net.peer.reply_wait 30", NULL, 0);
    snprintf(line, sizeof line, "net.server %s", opt_slot);
    console_must(line, NULL, 0);
}

/* ---- events ---- */

/* The players as the polled events tell them (c-api.md): who is seated, their latest name,
 * whether joined; own slot from NET_EVENT_CONNECTED. */
struct known_player {
    int present;
    int joined;
    char name[NET_EVENT_TEXT_LEN];
};
static struct known_player known[SLOTS];
static int own_slot = -1;

static void forget_players(void)
{
    memset(known, 0, sizeof known);
    own_slot = -1;
}

/* Follow one polled event; check it fits what the earlier events said. */
static void follow_event(const NET_Event *ev)
{
    const char *name = check_event_name(ev->type);
    int p = ev->player_id;
    struct known_player *k = p >= 0 && p < SLOTS ? &known[p] : NULL;

    switch (ev->type) {
    case NET_EVENT_CONNECTED:
        forget_players();
        own_slot = p;
        return;
    case NET_EVENT_DISCONNECTED:
        forget_players();
        return;
    default:
        break;
    }
    if (k == NULL || p == own_slot) {
        return;
    }
    switch (ev->type) {
    case NET_EVENT_PLAYER_CONNECTED:
        check(!k->present, "PLAYER_CONNECTED for slot %d, where '%s' is seated (no departure)", p,
              k->name);
        k->present = 1;
        k->joined = 0;
        snprintf(k->name, sizeof k->name, "%s", ev->text);
        break;
    case NET_EVENT_PLAYER_DISCONNECTED:
        check(k->present, "PLAYER_DISCONNECTED for slot %d, where nobody is seated", p);
        k->present = 0;
        k->joined = 0;
        break;
    case NET_EVENT_PLAYER_NAME:
        check(k->present, "PLAYER_NAME for slot %d, where nobody is seated", p);
        check(strcmp(k->name, ev->text) != 0, "PLAYER_NAME '%s' for slot %d repeats its name", ev->text,
              p);
        snprintf(k->name, sizeof k->name, "%s", ev->text);
        break;
    case NET_EVENT_PLAYER_JOINED:
        check(k->present && !k->joined, "PLAYER_JOINED for slot %d (%s)", p,
              k->present ? "already joined" : "nobody seated");
        k->joined = 1;
        break;
    case NET_EVENT_PLAYER_UNJOINED:
        check(k->present && k->joined, "PLAYER_UNJOINED for slot %d (%s)", p,
              k->present ? "not joined" : "nobody seated");
        k->joined = 0;
        break;
    default:
        /* What a player said is delivered even when it comes after its departure (a late
         * retransmission) or after 5 s without its player being seated: not checked. */
        (void)name;
        break;
    }
}

/* With every event polled since the last NETs_MaintainNet, the lookups answer what the events
 * said. */
static void check_lookups_match_events(void)
{
    int slot;

    for (slot = 0; slot < SLOTS; slot++) {
        const char *got;

        if (slot == own_slot) {
            continue;
        }
        got = NET_FetchPlayerName(slot);
        if (known[slot].present) {
            check(got != NULL && strcmp(got, known[slot].name) == 0,
                  "after every event was polled NET_FetchPlayerName(%d) is %s%s%s, the events "
                  "said '%s'",
                  slot, got ? "'" : "", got ? got : "NULL", got ? "'" : "", known[slot].name);
        } else {
            check(got == NULL,
                  "after every event was polled NET_FetchPlayerName(%d) is '%s', the events "
                  "said nobody is seated there",
                  slot, got);
        }
    }
}

/* Fields a type uses (c-api.md's table), as bits; every other field must be zero. */
#define F_OBJECT (1u << 0)
#define F_TARGET (1u << 1)
#define F_FLAGS (1u << 2)
#define F_CLASS (1u << 3)
#define F_CUSTOM (1u << 4)
#define F_POS (1u << 5)
#define F_DIR (1u << 6)
#define F_ORIENT (1u << 7)
#define F_LIST (1u << 8)
#define F_TEXT (1u << 9)
#define F_DATA (1u << 10)

static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        if (b[i] != 0) {
            return 0;
        }
    }
    return 1;
}

static void check_unused_fields(const NET_Event *ev)
{
    static const uint32_t used[] = {
        0,
        0,                                                /* CONNECTED */
        F_TEXT,                                           /* DISCONNECTED */
        F_TEXT,                                           /* PLAYER_CONNECTED */
        F_TEXT,                                           /* PLAYER_DISCONNECTED */
        0,                                                /* PLAYER_JOINED */
        F_LIST,                                           /* PLAYER_UNJOINED */
        F_TEXT,                                           /* PLAYER_NAME */
        F_TEXT,                                           /* TEXT */
        F_OBJECT | F_CLASS | F_POS | F_ORIENT | F_FLAGS,  /* CREATE_OBJECT */
        F_OBJECT | F_CLASS | F_POS | F_DIR,               /* CREATE_LASER */
        F_OBJECT | F_CLASS | F_POS | F_DIR | F_TARGET,    /* CREATE_MISSILE */
        F_OBJECT | F_CLASS | F_POS,                       /* CREATE_EXTRA */
        F_OBJECT | F_LIST,                                /* KILL_OBJECT */
        F_CLASS | F_POS,                                  /* PARTICLE_OBJECT */
        F_CUSTOM | F_DATA | F_FLAGS,                      /* CUSTOM */
        F_TEXT,                                           /* ERROR */
        F_OBJECT | F_TEXT,                                /* SERVER_LIST */
    };
    uint32_t u;
    const char *name = check_event_name(ev->type);

    if (ev->type >= sizeof used / sizeof used[0] || ev->type == 0) {
        return;
    }
    u = used[ev->type];
#define UNUSED_ZERO(bit, field)                                                                    \
    check((u & (bit)) != 0 || all_zero(&ev->field, sizeof ev->field),                              \
          "event %s: unused field " #field " is not zero", name)
    UNUSED_ZERO(F_OBJECT, object_id);
    UNUSED_ZERO(F_TARGET, target_id);
    UNUSED_ZERO(F_FLAGS, flags);
    UNUSED_ZERO(F_CLASS, object_class);
    UNUSED_ZERO(F_CUSTOM, custom_type);
    UNUSED_ZERO(F_POS, pos);
    UNUSED_ZERO(F_DIR, dir);
    UNUSED_ZERO(F_ORIENT, orient);
    UNUSED_ZERO(F_LIST, list_id);
    UNUSED_ZERO(F_DATA, data_len);
#undef UNUSED_ZERO
    check((u & F_TEXT) != 0 || ev->text[0] == '\0', "event %s: unused text \"%.60s\"", name,
          ev->text);
    check((u & F_TEXT) == 0 || ev->type == NET_EVENT_SERVER_LIST || ev->text[0] != '\0',
          "event %s: empty text", name);
    if (ev->data_len <= NET_EVENT_DATA_LEN) {
        check(all_zero(ev->data + ev->data_len, NET_EVENT_DATA_LEN - ev->data_len),
              "event %s: data beyond data_len %u is not zero", name, (unsigned)ev->data_len);
    }
    if (ev->type >= NET_EVENT_PLAYER_CONNECTED && ev->type <= NET_EVENT_PLAYER_NAME) {
        check(ev->player_id >= 0, "event %s: player_id %d", name, (int)ev->player_id);
    }
}

static void check_event(const NET_Event *ev)
{
    const char *nul = memchr(ev->text, '\0', sizeof ev->text);

    check(ev->type >= NET_EVENT_CONNECTED && ev->type <= NET_EVENT_SERVER_LIST,
          "event type %u is unknown", (unsigned)ev->type);
    check(ev->player_id == -1 || (ev->player_id >= 0 && ev->player_id < SLOTS),
          "event %s: player_id %d is not -1 or 0-%d", check_event_name(ev->type),
          (int)ev->player_id, SLOTS - 1);
    check(ev->type != NET_EVENT_CONNECTED || ev->player_id >= 0,
          "CONNECTED with player_id %d", (int)ev->player_id);
    check(nul != NULL, "event %s: text not NUL-terminated", check_event_name(ev->type));
    if (nul != NULL) {
        check(utf8_valid((const unsigned char *)ev->text, (size_t)(nul - ev->text)),
              "event %s: text is not UTF-8", check_event_name(ev->type));
    }
    check(ev->data_len <= NET_EVENT_DATA_LEN, "event %s: data_len %u",
          check_event_name(ev->type), (unsigned)ev->data_len);
    check(ev->type == NET_EVENT_CUSTOM || ev->data_len == 0, "event %s: data_len %u (not custom)",
          check_event_name(ev->type), (unsigned)ev->data_len);
    check_unused_fields(ev);
    follow_event(ev);
    if (trace) {
        printf("  event %s player %d \"%.80s\"\n", check_event_name(ev->type), (int)ev->player_id,
               nul != NULL ? ev->text : "");
    }
}

static int32_t poll_one(int null_out)
{
    NET_Event ev, before;
    int32_t rc;

    memset(&ev, 0x5A, sizeof ev);
    memcpy(&before, &ev, sizeof ev);
    rc = NET_PollEvent(null_out ? NULL : &ev);
    check_rc(rc, null_out ? E(NET_ERR_INVALID_ARGUMENT)
                          : inited ? OK_BIT | POS_BIT : E(NET_ERR_NOT_INITIALIZED));
    if (rc == 1 && !null_out) {
        check_event(&ev);
        if (ev.type <= NET_EVENT_SERVER_LIST) {
            events_seen[ev.type]++;
        }
    } else if (rc > 1) {
        fail("NET_PollEvent returned %d", (int)rc);
    } else if (rc < 0 && !null_out) {
        check(memcmp(&ev, &before, sizeof ev) == 0, "a failed NET_PollEvent wrote the event");
    }
    return rc;
}

/* `n` frames: MaintainNet, then poll every event, a short sleep. */
static void frames(int n, int sleep_ms)
{
    int i, polled;

    for (i = 0; i < n; i++) {
        if (hold_left > 0) {
            hold_left--;
        } else {
            begin("frame %d of %d: NETs_MaintainNet()", i + 1, n);
            NETs_MaintainNet();
            checks++;
        }
        begin("frame %d of %d: NET_PollEvent until 0", i + 1, n);
        for (polled = 0; polled < 10000; polled++) {
            if (poll_one(0) != 1) {
                break;
            }
        }
        check(polled < 10000, "10000 events in one frame");
        if (inited) {
            begin("frame %d of %d: lookups against the events", i + 1, n);
            check_lookups_match_events();
        }
        if (sleep_ms > 0) {
            check_sleep_ms(sleep_ms);
        }
    }
}

/* ---- the actions ---- */

static void act_init(void)
{
    int32_t rc;
    int was = inited;

    begin("NET_Init()");
    rc = NET_Init();
    inited = 1;
    check_rc(rc, OK_BIT);
    if (rc == NET_OK && !was) {
        setup();
    }
}

static void act_shutdown(void)
{
    int times = chance(30) ? 2 : 1, i;

    for (i = 0; i < times; i++) {
        begin("NET_Shutdown() (%d of %d)", i + 1, times);
        NET_Shutdown();
        checks++;
    }
    inited = 0;
    forget_players();
    demo_shown = 0;
}

static void act_misc(void)
{
    if (chance(50)) {
        uint32_t v;
        begin("NET_GetAbiVersion()");
        v = NET_GetAbiVersion();
        check(v == NET_ABI_VERSION, "%u, not NET_ABI_VERSION %u", (unsigned)v,
              (unsigned)NET_ABI_VERSION);
    } else {
        const char *m;
        begin("NET_GetLastError()");
        m = NET_GetLastError();
        check(m != NULL && memchr(m, '\0', 4096) != NULL, "NULL or unterminated");
    }
}

static void act_console(void)
{
    static char line[MAX_LINE + 300];
    struct expect_line e;

    pick_line(line, &e);
    console_line(line, &e, NULL, 0);
}

static void act_protocol(void)
{
    uint32_t k = below(7);
    int direct = chance(15);
    const uint32_t proto = E(NET_ERR_NO_PROTOCOL);
    int32_t rc;

    switch (k) {
    case 0:
        begin("%s()", direct ? "(NETs_Connect)" : "NETs_Connect");
        rc = direct ? (NETs_Connect)() : NETs_Connect();
        check_rc(rc, state_codes(OK_BIT | proto | E(NET_ERR_STATE) | E(NET_ERR_IO) |
                                 E(NET_ERR_BACKEND_LOAD) | E(NET_ERR_INVALID_ARGUMENT) |
                                 E(NET_ERR_NO_BACKEND) | E(NET_ERR_PARSE)));
        break;
    case 1:
        begin("%s()", direct ? "(NETs_Disconnect)" : "NETs_Disconnect");
        rc = direct ? (NETs_Disconnect)() : NETs_Disconnect();
        check_rc(rc, state_codes(OK_BIT | proto | E(NET_ERR_NOT_CONNECTED)));
        break;
    case 2:
        begin("%s()", direct ? "(NETs_Join)" : "NETs_Join");
        rc = direct ? (NETs_Join)() : NETs_Join();
        check_rc(rc, state_codes(OK_BIT | proto | E(NET_ERR_NOT_CONNECTED)));
        break;
    case 3: {
        uint8_t flag = chance(70) ? (uint8_t)below(2) : (uint8_t)below(256);
        begin("%s(%u)", direct ? "(NETs_Unjoin)" : "NETs_Unjoin", (unsigned)flag);
        rc = direct ? (NETs_Unjoin)(flag) : NETs_Unjoin(flag);
        check_rc(rc, state_codes(OK_BIT | proto | E(NET_ERR_NOT_CONNECTED) | E(NET_ERR_STATE)));
        break;
    }
    case 4:
        begin("%s()", direct ? "(NETs_UpdateName)" : "NETs_UpdateName");
        rc = direct ? (NETs_UpdateName)() : NETs_UpdateName();
        check_rc(rc, state_codes(OK_BIT | proto | E(NET_ERR_NOT_CONNECTED) |
                                 E(NET_ERR_INVALID_ARGUMENT)));
        break;
    default:
        begin("%s()", direct ? "(NETs_MaintainNet)" : "NETs_MaintainNet");
        if (direct) {
            (NETs_MaintainNet)();
        } else {
            NETs_MaintainNet();
        }
        checks++;
        break;
    }
}

static void act_frames(void)
{
    frames(1 + (int)below(12), (int)below(4));
}

static void act_name(void)
{
    char name[100];
    int is_null;
    int32_t err = pick_name(name, sizeof name, &is_null);
    int32_t rc;

    begin("NET_SetPlayerName(%s%s%s) (%zu bytes)", is_null ? "NULL" : "\"",
          is_null ? "" : name, is_null ? "" : "\"", is_null ? 0 : strlen(name));
    rc = NET_SetPlayerName(is_null ? NULL : name);
    check_rc(rc, err != 0 ? E(err) : state_codes(OK_BIT));
}

static void act_state(void)
{
    NET_ShipState s;
    int defect = chance(15);
    int null = !defect && chance(5);
    size_t i;
    int32_t rc;

    random_floats(s.pos, 3, 0);
    random_floats(s.orient, 4, 0);
    random_floats(s.vel, 3, 0);
    for (i = 0; i < sizeof s.game; i++) {
        s.game[i] = (uint8_t)below(256);
    }
    if (defect) {
        float *fields[] = {s.pos, s.orient, s.vel};
        int which = (int)below(3);
        random_floats(fields[which], which == 1 ? 4 : 3, 1);
    }
    begin("NET_SetLocalState(%s)", null ? "NULL" : defect ? "non-finite" : "valid");
    rc = NET_SetLocalState(null ? NULL : &s);
    check_rc(rc, defect || null ? E(NET_ERR_INVALID_ARGUMENT) : state_codes(OK_BIT));
}

static int32_t random_id(int *impossible)
{
    uint32_t k = below(10);

    *impossible = 1;
    if (k == 0) {
        return -1 - (int32_t)below(100);
    }
    if (k == 1) {
        return chance(50) ? INT32_MIN : INT32_MAX;
    }
    if (k == 2) {
        return SLOTS + (int32_t)below(300);
    }
    *impossible = 0;
    return (int32_t)below(SLOTS);
}

static void act_player_state(void)
{
    NET_ShipState s, before;
    int impossible;
    int32_t id = random_id(&impossible);
    int null = chance(5);
    int32_t rc;

    memset(&s, 0x77, sizeof s);
    memcpy(&before, &s, sizeof s);
    begin("NET_GetPlayerState(%d, %s)", (int)id, null ? "NULL" : "&out");
    rc = NET_GetPlayerState(id, null ? NULL : &s);
    check_rc(rc, impossible || null ? E(NET_ERR_INVALID_ARGUMENT)
                                    : state_codes(OK_BIT | E(NET_ERR_INVALID_ARGUMENT) |
                                                  E(NET_ERR_NOT_CONNECTED)));
    if (rc < 0 && !null) {
        check(memcmp(&s, &before, sizeof s) == 0, "a failed call wrote the state");
    }
    if (rc == 0) {
        int i;
        for (i = 0; i < 3; i++) {
            check(isfinite(s.pos[i]) && isfinite(s.vel[i]), "a non-finite state came back");
        }
    }
}

static void act_fetch_name(void)
{
    int impossible;
    int32_t id = random_id(&impossible);
    const char *name;

    begin("NET_FetchPlayerName(%d)", (int)id);
    name = NET_FetchPlayerName(id);
    checks++;
    if (name == NULL) {
        const char *m = NET_GetLastError();
        if (impossible || !inited) {
            check(is_one_line(m), "NULL but NET_GetLastError() is \"%s\"", m != NULL ? m : "");
        }
        return;
    }
    check(!impossible, "a name \"%.40s\" for an impossible id", name);
    check(inited, "a name before NET_Init");
    {
        const char *nul = memchr(name, '\0', 32);
        check(nul != NULL && nul != name, "an empty or over-long name");
        if (nul != NULL) {
            check(utf8_valid((const unsigned char *)name, (size_t)(nul - name)),
                  "the name is not UTF-8");
        }
    }
}

static void act_fetch_owner(void)
{
    uint32_t ids[] = {0, 1, 2, 7, 1000, 0xFFFFFFFFu, 0x80000000u};
    uint32_t id = chance(50) ? ids[below(7)] : 1 + below(64);
    int32_t owner;

    begin("NET_FetchOwner(%u)", (unsigned)id);
    owner = NET_FetchOwner(id);
    checks++;
    check(owner == -1 || (owner >= 0 && owner < SLOTS), "owner %d", (int)owner);
    check(inited || owner == -1, "owner %d before NET_Init", (int)owner);
    check(id != 0 || owner == -1, "object 0 has owner %d", (int)owner);
}

static void act_poll(void)
{
    int null = chance(10);

    begin("NET_PollEvent(%s)", null ? "NULL" : "&ev");
    poll_one(null);
}

/* The remote-event calls with one defect at most; the codes a valid call may get. */
static void act_rmev(void)
{
    const uint32_t sent = state_codes(OK_BIT | E(NET_ERR_NOT_CONNECTED) | E(NET_ERR_FULL) |
                                      E(NET_ERR_STATE));
    float pos[3], v4[4], dir[3];
    int defect = chance(30);
    uint32_t object_id = 1 + below(64);
    int32_t rc, err = 0;
    int kind = (int)below(9);
    const float *p = pos, *q = v4, *d = dir;

    random_floats(pos, 3, 0);
    random_floats(v4, 4, 0);
    random_floats(dir, 3, 0);
    if (defect && kind <= 3) {
        /* NULL, non-finite or id 0 */
        uint32_t what = below(4);
        err = NET_ERR_INVALID_ARGUMENT;
        if (what == 0) {
            object_id = 0;
        } else if (what == 1) {
            p = NULL;
        } else if (what == 2) {
            random_floats(pos, 3, 1);
        } else if (kind == 0) {
            q = NULL;
        } else if (kind == 3) {
            p = NULL;
        } else {
            d = NULL;
        }
    }
    switch (kind) {
    case 0: {
        uint32_t flags = below(4) == 0 ? 0xFFFFFFFFu : below(16);
        begin("NET_RmEvCreateObject(%u, ..., %s, %s, %u)%s", (unsigned)object_id,
              p ? "pos" : "NULL", q ? "orient" : "NULL", (unsigned)flags,
              defect ? " (defect)" : "");
        rc = NET_RmEvCreateObject(object_id, (uint16_t)below(65536), p, q, flags);
        break;
    }
    case 1:
        begin("NET_RmEvCreateLaser(%u, ..., %s, %s)%s", (unsigned)object_id, p ? "pos" : "NULL",
              d ? "dir" : "NULL", defect ? " (defect)" : "");
        rc = NET_RmEvCreateLaser(object_id, (uint16_t)below(65536), p, d);
        break;
    case 2:
        begin("NET_RmEvCreateMissile(%u, ..., %s, %s)%s", (unsigned)object_id,
              p ? "pos" : "NULL", d ? "dir" : "NULL", defect ? " (defect)" : "");
        rc = NET_RmEvCreateMissile(object_id, (uint16_t)below(65536), p, d, below(3));
        break;
    case 3:
        begin("NET_RmEvCreateExtra(%u, ..., %s)%s", (unsigned)object_id, p ? "pos" : "NULL",
              defect ? " (defect)" : "");
        rc = NET_RmEvCreateExtra(object_id, (uint16_t)below(65536), p);
        break;
    case 4: {
        uint8_t list = (uint8_t)below(16);
        if (defect) {
            if (chance(50)) {
                object_id = 0;
            } else {
                list = (uint8_t)(16 + below(240));
            }
            err = NET_ERR_INVALID_ARGUMENT;
        }
        begin("NET_RmEvKillObject(%u, %u)", (unsigned)object_id, (unsigned)list);
        rc = NET_RmEvKillObject(object_id, list);
        break;
    }
    case 5: {
        char text[400];
        const char *t = text;
        size_t n = chance(10) ? 255 : 1 + below(60);
        random_text(text, n);
        if (chance(20)) {
            text[below((uint32_t)n)] = '\t';
        }
        if (defect) {
            switch (below(5)) {
            case 0:
                t = NULL;
                err = NET_ERR_INVALID_ARGUMENT;
                break;
            case 1:
                text[0] = '\0';
                err = NET_ERR_INVALID_ARGUMENT;
                break;
            case 2:
                random_text(text, 256 + below(100));
                err = NET_ERR_TOO_LARGE;
                break;
            case 3:
                text[below((uint32_t)n)] = '\n';
                err = NET_ERR_INVALID_ARGUMENT;
                break;
            default:
                text[below((uint32_t)n)] = (char)0xFF;
                err = NET_ERR_INVALID_ARGUMENT;
                break;
            }
        }
        begin("NET_RmEvSendText(%s) (%zu bytes)", t ? "text" : "NULL", t ? strlen(t) : 0);
        rc = NET_RmEvSendText(t);
        break;
    }
    case 6: {
        char name[100];
        int is_null;
        err = pick_name(name, sizeof name, &is_null);
        defect = err != 0;
        begin("NET_RmEvPlayerName(%s%s%s) (%zu bytes)", is_null ? "NULL" : "\"",
              is_null ? "" : name, is_null ? "" : "\"", is_null ? 0 : strlen(name));
        rc = NET_RmEvPlayerName(is_null ? NULL : name);
        if (err == 0) {
            /* a name a slot or game server cannot carry is refused there at once */
            check_rc(rc, sent | (inited ? E(NET_ERR_INVALID_ARGUMENT) : 0));
            return;
        }
        break;
    }
    case 7:
        if (defect) {
            p = NULL;
            err = NET_ERR_INVALID_ARGUMENT;
            if (chance(50)) {
                p = pos;
                random_floats(pos, 3, 1);
            }
        }
        begin("NET_RmEvParticleObject(..., %s)%s", p ? "origin" : "NULL",
              defect ? " (defect)" : "");
        rc = NET_RmEvParticleObject((uint16_t)below(65536), p);
        break;
    default: {
        static const size_t lens[] = {0, 1, 17, 255, 256};
        unsigned char data[300];
        size_t len = lens[below(5)];
        uint32_t flags = chance(50) ? NET_SEND_RELIABLE : 0;
        const void *dp = data;
        size_t i;
        for (i = 0; i < sizeof data; i++) {
            data[i] = (unsigned char)below(256);
        }
        if (len == 0 && chance(50)) {
            dp = NULL;
        }
        if (defect) {
            switch (below(4)) {
            case 0:
                len = 257 + below(40);
                dp = data;
                err = NET_ERR_TOO_LARGE;
                break;
            case 1:
                dp = NULL;
                len = 1 + below(256);
                err = NET_ERR_INVALID_ARGUMENT;
                break;
            case 2:
                flags = chance(50) ? 2 + below(100) : 0xFFFFFFFFu;
                err = NET_ERR_INVALID_ARGUMENT;
                break;
            default:
                len = SIZE_MAX - below(3);
                err = NET_ERR_INVALID_ARGUMENT; /* or TOO_LARGE: see below */
                break;
            }
        }
        begin("NET_RmEvCustom(%u, %s, %zu, 0x%x)", 7u, dp ? "data" : "NULL", len,
              (unsigned)flags);
        rc = NET_RmEvCustom(7, dp, len, flags);
        if (len > 1000 && err == NET_ERR_INVALID_ARGUMENT) {
            check_rc(rc, E(NET_ERR_INVALID_ARGUMENT) | E(NET_ERR_TOO_LARGE));
            return;
        }
        break;
    }
    }
    check_rc(rc, err != 0 ? E(err) : sent);
    rmev_taken += rc == NET_OK;
}

/* A calm phase starts with a protocol, a server or peer, and a connect, then plays. */
static void start_calm(void)
{
    static const char *const subs[] = {"peer", "slotserver", "gameserver"};
    char line[300];
    struct expect_line e;
    uint32_t which = below(3);

    e.exact = 0;
    e.code = 0;
    e.set = OK_BIT | ANY_ERROR;
    e.defect = 0;
    calm_left = 20 + below(100);
    snprintf(line, sizeof line, "net.subsys %s", subs[which]);
    console_line(line, &e, NULL, 0);
    if (which == 0) {
        snprintf(line, sizeof line, "connect %s", random_peer());
    } else {
        snprintf(line, sizeof line, "connect %s", which == 1 ? opt_slot : opt_game);
    }
    console_line(line, &e, NULL, 0);
    if (chance(50)) {
        begin("NETs_Join() (calm)");
        NETs_Join();
    }
}

/* What a game does while playing: frames, events, states, chat; no switches. */
static void calm_step(void)
{
    uint32_t k = below(100);

    calm_left--;
    if (k < 40) {
        frames(1 + (int)below(6), 1 + (int)below(4));
    } else if (k < 62) {
        act_rmev();
    } else if (k < 70) {
        act_state();
    } else if (k < 74) {
        act_player_state();
    } else if (k < 78) {
        act_fetch_name();
    } else if (k < 81) {
        act_fetch_owner();
    } else if (k < 84) {
        act_name();
    } else {
        static const char *const lines[] = {"status", "players", "say hello there", "join",
                                            "unjoin", "unjoin 1", "name calm", "net.rate 3000",
                                            "net.sendfreq 30", "help say", "NETs_Join",
                                            "NETs_UpdateName", "net.api udp", "record", "stop",
                                            "play", "net.subsys slotserver", "servers"};
        const char *line = lines[below(sizeof lines / sizeof lines[0])];
        char with_file[600];
        if (strcmp(line, "record") == 0 || strcmp(line, "play") == 0) {
            snprintf(with_file, sizeof with_file, "%s %s", line, opt_demo);
            line = with_file;
        }
        if (strncmp(line, "NETs_", 5) == 0) {
            int32_t rc;
            begin("%s() (calm)", line);
            rc = line[5] == 'J' ? NETs_Join() : NETs_UpdateName();
            check_rc(rc, state_codes(OK_BIT | E(NET_ERR_NO_PROTOCOL) | E(NET_ERR_NOT_CONNECTED) |
                                     E(NET_ERR_INVALID_ARGUMENT)));
        } else {
            struct expect_line e;
            e.exact = 0;
            e.code = 0;
            e.set = OK_BIT | ANY_ERROR;
            e.defect = 0;
            console_line(line, &e, NULL, 0);
        }
    }
}

/* ---- extra actions (their own PRNG stream) ---- */

static int32_t console_any(const char *line)
{
    struct expect_line e;

    e.exact = 0;
    e.code = 0;
    e.set = OK_BIT | ANY_ERROR;
    e.defect = 0;
    return console_line(line, &e, NULL, 0);
}

/* Write a damaged copy of the demo file (cut anywhere, a byte flipped, random bytes or empty)
 * to `path`; the original may not exist yet (then random bytes). */
static void write_damaged_demo(const char *path)
{
    static unsigned char buf[1 << 20];
    size_t n = 0, i;
    FILE *in = fopen(opt_demo, "rb");
    FILE *out;
    uint32_t how = below2(4);

    if (in != NULL) {
        n = fread(buf, 1, sizeof buf, in);
        fclose(in);
    }
    if (n == 0 || how == 2) {
        n = 1 + below2(600);
        for (i = 0; i < n; i++) {
            buf[i] = (unsigned char)below2(256);
        }
        if (chance2(50) && n >= 8) {
            memcpy(buf, "PNDEMO", 6); /* a plausible start */
        }
    } else if (how == 0) {
        n = below2((uint32_t)n);
    } else if (how == 1) {
        buf[below2((uint32_t)n)] ^= (unsigned char)(1u << below2(8));
    } else {
        n = 0;
    }
    out = fopen(path, "wb");
    if (out == NULL) {
        fail("cannot write %s", path);
        return;
    }
    if (n > 0 && fwrite(buf, 1, n, out) != n) {
        fail("cannot write %s", path);
    }
    fclose(out);
}

/* A burst of custom events at the size limit, the reliable ones filling the queue, maybe with
 * a switch right after. */
static void custom_burst(void)
{
    unsigned char data[NET_EVENT_DATA_LEN];
    int n = 10 + (int)below2(120), i;
    size_t k;

    for (k = 0; k < sizeof data; k++) {
        data[k] = (unsigned char)below2(256);
    }
    for (i = 0; i < n; i++) {
        uint32_t flags = chance2(70) ? NET_SEND_RELIABLE : 0;
        size_t len = chance2(80) ? NET_EVENT_DATA_LEN : below2(NET_EVENT_DATA_LEN + 1);
        int32_t rc;
        begin("burst %d of %d: NET_RmEvCustom(%u, data, %zu, 0x%x)", i + 1, n, 9u, len,
              (unsigned)flags);
        rc = NET_RmEvCustom(9, data, len, flags);
        check_rc(rc, state_codes(OK_BIT | E(NET_ERR_NOT_CONNECTED) | E(NET_ERR_FULL) |
                                 E(NET_ERR_STATE)));
        rmev_taken += rc == NET_OK;
    }
    if (chance2(50)) {
        static const char *const switches[] = {"net.subsys peer", "net.subsys slotserver",
                                               "net.subsys gameserver", "net.api udp",
                                               "disconnect", "net.port 0"};
        console_any(switches[below2(6)]);
    }
}

/* Now and then, between two steps: things a game does that the main choices rarely combine. */
static void extra_action(void)
{
    char line[600], name[64];
    uint32_t k;

    if (!chance2(6)) {
        return;
    }
    k = below2(100);
    if (k < 12) {
        /* frames without NETs_MaintainNet for a while */
        hold_left = 5 + below2(60);
        begin("extra: the next %ld frames skip NETs_MaintainNet", hold_left);
    } else if (k < 20) {
        /* no call at all for a while: past net.timeout 2 the others drop this game */
        long ms = 100 + below2(2600);
        if (ms > stall_budget_ms) {
            ms = stall_budget_ms;
        }
        stall_budget_ms -= ms;
        begin("extra: no call for %ld ms", ms);
        if (ms > 0) {
            check_sleep_ms((int)ms);
        }
    } else if (k < 26) {
        console_any(chance2(70) ? "net.timeout 2" : "net.timeout 20");
    } else if (k < 40) {
        /* a rename by console (held until a slot or game server answers) */
        random_name(name, 1 + below2(31 - 1));
        if (chance2(20)) {
            random_name(name, 31);
        }
        snprintf(line, sizeof line, "name %s", name);
        console_any(line);
        if (chance2(50)) {
            frames(1 + (int)below2(5), 1);
            snprintf(line, sizeof line, "name %s%s", name, chance2(50) ? "" : "2");
            console_any(line);
        }
    } else if (k < 48) {
        /* NET_Shutdown and NET_Init in mid-game, the partners still running */
        act_shutdown();
        if (chance2(80)) {
            act_init();
            if (chance2(60)) {
                start_calm();
            }
        }
    } else if (k < 58) {
        static const char *const ports[] = {"0", "0", "", "65535", "1"};
        uint32_t c = below2(6);
        if (c == 5) {
            snprintf(line, sizeof line, "net.port %d", opt_port);
        } else {
            snprintf(line, sizeof line, "net.port %s", ports[c]);
        }
        console_any(line);
    } else if (k < 70) {
        static const char *const lines[] = {
            "net.sendfreq 5",  "net.sendfreq 60", "net.rate 1",     "net.rate 100000000",
            "net.rate 100000001", "net.rate 0",   "net.sendfreq 4", "net.rate 4294967296",
            "net.rate 50",     "net.sendfreq 61",
        };
        console_any(lines[below2(10)]);
    } else if (k < 84) {
        char bad[500];
        snprintf(bad, sizeof bad, "%s.bad", opt_demo);
        write_damaged_demo(bad);
        snprintf(line, sizeof line, "play %s", bad);
        console_any(line);
        if (chance2(50)) {
            frames(1 + (int)below2(30), 1);
        }
        if (chance2(50)) {
            console_any("stop");
        }
        remove(bad);
    } else {
        custom_burst();
    }
}

/* ---- the end: not connected, whatever happened ---- */

static void finish(void)
{
    static char reply[65536];
    char first[200];
    size_t n;

    hold_left = 0;
    if (!inited) {
        act_init();
    }
    if (console_may("stop", OK_BIT | E(NET_ERR_STATE)) >= 0) {
        demo_off_check(); /* one `stop` ends what there was */
    }
    console_may("disconnect", OK_BIT | E(NET_ERR_NOT_CONNECTED));
    frames(40, 2);
    console_must("status", reply, sizeof reply);
    n = strcspn(reply, "\n");
    snprintf(first, sizeof first, "%.*s", (int)(n < 190 ? n : 190), reply);
    begin("final status");
    check(strstr(first, "(not connected)") != NULL,
          "after stop, disconnect and 40 frames status says \"%s\"", first);
    begin("NET_Shutdown() twice at the end");
    NET_Shutdown();
    NET_Shutdown();
    inited = 0;
    alarm(0);
}

int main(int argc, char **argv)
{
    long steps = 300;
    int i;
    struct sigaction sa;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trace") == 0) {
            trace = 1;
        } else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (i + 1 < argc && strcmp(argv[i], "--steps") == 0) {
            steps = atol(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--port") == 0) {
            opt_port = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--closed") == 0) {
            opt_closed = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--peer") == 0) {
            if (opt_peer_count < 3) {
                opt_peers[opt_peer_count++] = argv[++i];
            }
        } else if (i + 1 < argc && strcmp(argv[i], "--slot") == 0) {
            opt_slot = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--game") == 0) {
            opt_game = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--demo") == 0) {
            opt_demo = argv[++i];
        } else {
            fprintf(stderr, "api_chaos: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (opt_peer_count == 0 || opt_slot == NULL || opt_game == NULL || opt_demo == NULL ||
        opt_port <= 0) {
        fprintf(stderr, "api_chaos: --port, --peer, --slot, --game and --demo are required\n");
        return 2;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    rng = seed;
    rng2 = seed ^ 0x5DEECE66Dull;
    stall_budget_ms = steps * 2;
    printf("NOTE seed %llu, %ld steps, port %d\n", seed, steps, opt_port);
    fflush(stdout);
    if (chance(80)) {
        act_init();
    }

    /* Most of the time a game is running. */
    for (step = 0; step < steps; step++) {
        uint32_t k;

        extra_action();
        k = below(100);

        if (calm_left > 0) {
            calm_step();
            continue;
        }
        if (k < 8) {
            start_calm();
            continue;
        }
        k = below(100);
        if (k < 3) {
            act_init();
        } else if (k < 5) {
            if (chance(50)) {
                act_shutdown();
            } else {
                act_init();
            }
        } else if (k < 7) {
            act_misc();
        } else if (k < 32) {
            act_console();
        } else if (k < 44) {
            act_protocol();
        } else if (k < 58) {
            act_frames();
        } else if (k < 62) {
            act_name();
        } else if (k < 66) {
            act_state();
        } else if (k < 69) {
            act_player_state();
        } else if (k < 72) {
            act_fetch_name();
        } else if (k < 75) {
            act_fetch_owner();
        } else if (k < 80) {
            act_poll();
        } else {
            act_rmev();
        }
    }
    finish();
    {
        uint32_t t;
        printf("NOTE seed %llu reached: %ld remote events taken; events", seed, rmev_taken);
        for (t = 1; t <= NET_EVENT_SERVER_LIST; t++) {
            printf(" %s %ld", check_event_name(t), events_seen[t]);
        }
        printf("\n");
    }
    printf("api_chaos: seed %llu, %ld steps, %ld checks, %d failed\n", seed, steps, checks,
           failures);
    return failures == 0 ? 0 : 1;
}
