/*
 * api_errors.c: calls every function of parsec_net.h with bad arguments (NULL pointers,
 * impossible and off-by-one lengths, malformed text, bad console lines) and in bad states (before
 * NET_Init, after NET_Shutdown), and checks that each returns its documented error code
 * (never -1), leaves a one-line NET_GetLastError(), writes nothing it should not, and that
 * `status` counts the bad input. Each NETs_ call is made both through the jump table (the header's
 * macros) and directly (the exported function). Exit status 0 only if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parsec_net.h"

#define OUT_CAP 4096

/* Bad input that reached the core (counted by `status`) and bad input refused at the C boundary
 * before it (may or may not be counted: the check accepts both and prints which). */
static int bad_lines_core, bad_lines_boundary;
static int bad_nodes_core, bad_nodes_boundary;

/* Log lines the callback received, and whether each was a single line. */
static int log_lines, log_lines_multiline;

static void count_log_line(int32_t level, const char *message, void *user)
{
    int *counter = user;

    (void)level;
    (*counter)++;
    log_lines++;
    if (!is_one_line(message)) {
        log_lines_multiline++;
    }
}

/* Run a console line and expect `want`. `reaches_core`: 1 if the line passes the C boundary and
 * is refused by the console itself (so `status` must count it), 0 if the boundary refuses it. */
static void console_expect(const char *what, const char *line, int32_t want, int reaches_core)
{
    char out[OUT_CAP];
    char label[200];
    int32_t rc;

    memset(out, 'X', sizeof out);
    rc = NET_ConsoleExec(line, out, sizeof out);
    snprintf(label, sizeof label, "NET_ConsoleExec(%s)", what);
    expect_code(label, rc, want);
    if (want < 0) {
        snprintf(label, sizeof label, "NET_ConsoleExec(%s) writes its error message", what);
        expect_true(label, is_one_line(out) && strcmp(out, NET_GetLastError()) == 0, out);
        if (reaches_core) {
            bad_lines_core++;
        } else {
            bad_lines_boundary++;
        }
    }
}

/* A number from the `status` output: the digits after `key`, or -1. */
static long status_number(const char *key)
{
    char out[OUT_CAP];
    const char *at;

    if (NET_ConsoleExec("status", out, sizeof out) != NET_OK) {
        return -1;
    }
    at = strstr(out, key);
    return at != NULL ? strtol(at + strlen(key), NULL, 10) : -1;
}

/* Check a `status` counter against the bad input this program gave. */
static void expect_counted(const char *what, const char *key, int core, int boundary)
{
    char detail[300];
    long counted = status_number(key);

    snprintf(detail, sizeof detail,
             "status says %s%ld; %d refused by the core (must be counted), %d refused at the C "
             "boundary (%s)",
             key, counted, core, boundary,
             counted == core + boundary ? "counted too" : "not counted");
    expect_true(what, counted >= core && counted <= core + boundary,
                detail);
}

/* Every NETs_ call with valid arguments must fail with `want` (used before NET_Init and after
 * NET_Shutdown). */
static void expect_all_calls_fail(const char *when, int32_t want)
{
    NET_Node a, b;
    char text[64], out[OUT_CAP], label[160];
    unsigned char data[16] = {1, 2, 3};

    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
#define EXPECT(call)                                                                           \
    do {                                                                                       \
        snprintf(label, sizeof label, "%s: %s", when, #call);                                  \
        expect_code(label, (call), want);                                                      \
    } while (0)
    EXPECT(NET_ConsoleExec("status", out, sizeof out));
    EXPECT(NETs_ResolveNode("127.0.0.1:7000", &a));
    EXPECT((NETs_ResolveNode)("127.0.0.1:7000", &a));
    EXPECT(NETs_PrintNode(&a, text, sizeof text));
    EXPECT((NETs_PrintNode)(&a, text, sizeof text));
    EXPECT(NETs_CompareNodes(&a, &b));
    EXPECT((NETs_CompareNodes)(&a, &b));
    EXPECT(NETs_LocalNode(&a));
    EXPECT((NETs_LocalNode)(&a));
    EXPECT(NETs_SendDatagram(&a, data, sizeof data));
    EXPECT((NETs_SendDatagram)(&a, data, sizeof data));
    EXPECT(NETs_ReceiveDatagram(&a, data, sizeof data));
    EXPECT((NETs_ReceiveDatagram)(&a, data, sizeof data));
    EXPECT(NETs_Connect());
    EXPECT((NETs_Connect)());
    EXPECT(NETs_Disconnect());
    EXPECT((NETs_Disconnect)());
    EXPECT(NETs_Join());
    EXPECT((NETs_Join)());
    EXPECT(NETs_Unjoin(0));
    EXPECT((NETs_Unjoin)(0));
    EXPECT(NETs_UpdateName());
    EXPECT((NETs_UpdateName)());
#undef EXPECT
    NETs_MaintainNet();
    (NETs_MaintainNet)();
    snprintf(label, sizeof label, "%s: NETs_MaintainNet returns quietly", when);
    expect_true(label, 1, "");
}

static void check_console(void)
{
    char out[OUT_CAP];
    static char line[6000];
    int32_t rc;

    console_expect("NULL line", NULL, NET_ERR_INVALID_ARGUMENT, 0);
    expect_code("NET_ConsoleExec(\"status\", NULL, 10)", NET_ConsoleExec("status", NULL, 10),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("NET_ConsoleExec(\"status\", NULL, 0)", NET_ConsoleExec("status", NULL, 0),
                NET_OK);
    expect_code("NET_ConsoleExec(\"status\", out, SIZE_MAX)",
                NET_ConsoleExec("status", out, SIZE_MAX), NET_ERR_INVALID_ARGUMENT);

    memset(out, 'X', sizeof out);
    rc = NET_ConsoleExec("help", out, 8);
    expect_code("NET_ConsoleExec(\"help\", out, 8)", rc, NET_OK);
    expect_true("a reply longer than the buffer is truncated and terminated",
                strlen(out) == 7 && out[8] == 'X', out);
    memset(out, 'X', sizeof out);
    rc = NET_ConsoleExec("help", out, 1);
    expect_true("a 1-byte buffer gets just the terminator", rc == NET_OK && out[0] == '\0' &&
                out[1] == 'X', "");
    rc = NET_ConsoleExec("help", out, sizeof out);
    expect_true("help lists net.api and net.port",
                rc == NET_OK && strstr(out, "net.api") != NULL && strstr(out, "net.port") != NULL,
                "");

    memset(line, 'x', 5000);
    line[5000] = '\0';
    console_expect("a 5000-byte line", line, NET_ERR_TOO_LARGE, 0);
    line[1025] = '\0';
    console_expect("a 1025-byte line", line, NET_ERR_TOO_LARGE, 0);
    line[1024] = '\0';
    console_expect("a 1024-byte unknown command", line, NET_ERR_UNKNOWN_COMMAND, 1);

    console_expect("\"status\\x01\"", "status\x01", NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"help\\x1b[2J\"", "help\x1b[2J", NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"status\\nstatus\"", "status\nstatus", NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"\\xff\\xfe status\" (invalid UTF-8)", "\xff\xfe status",
                   NET_ERR_INVALID_ARGUMENT, 0);
    console_expect("\"frobnicate\"", "frobnicate", NET_ERR_UNKNOWN_COMMAND, 1);
    console_expect("\"help no.such.command\"", "help no.such.command", NET_ERR_UNKNOWN_COMMAND,
                   1);
    console_expect("\"status extra\"", "status extra", NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"net.port abc\"", "net.port abc", NET_ERR_PARSE, 1);
    console_expect("\"net.port 70000\"", "net.port 70000", NET_ERR_PARSE, 1);
    console_expect("\"net.port -1\"", "net.port -1", NET_ERR_PARSE, 1);
    console_expect("\"net.port 1 2\"", "net.port 1 2", NET_ERR_PARSE, 1);
    console_expect("\"net.sendfreq 99\"", "net.sendfreq 99", NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"net.timeout soon\"", "net.timeout soon", NET_ERR_PARSE, 1);
    console_expect("\"net.api bad name!\"", "net.api bad name!", NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"net.api no_such_backend_xyz\"", "net.api no_such_backend_xyz",
                   NET_ERR_BACKEND_LOAD, 1);
    console_expect("\"net.subsys bogus\"", "net.subsys bogus", NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"net.udp.b@d 1\"", "net.udp.b@d 1", NET_ERR_INVALID_ARGUMENT, 1);
    strcpy(line, "net.udp.bind ");
    memset(line + strlen(line), 'a', 300);
    line[13 + 300] = '\0';
    console_expect("a 300-character option value", line, NET_ERR_INVALID_ARGUMENT, 1);
    console_expect("\"\" (empty line)", "", NET_OK, 0);
    console_expect("\"  \\t \" (blank line)", "  \t ", NET_OK, 0);
}

static void check_nodes(NET_Node *valid)
{
    NET_Node node, other, garbage;
    char text[64];
    static char long_text[400];
    int32_t rc, ab, ba;

    expect_code("NETs_ResolveNode(NULL, &node)", NETs_ResolveNode(NULL, &node),
                NET_ERR_INVALID_ARGUMENT);
    bad_nodes_boundary++;
    expect_code("(NETs_ResolveNode)(\"127.0.0.1:7000\", NULL)",
                (NETs_ResolveNode)("127.0.0.1:7000", NULL), NET_ERR_INVALID_ARGUMENT);
    bad_nodes_boundary++;
    memset(&node, 0xAA, sizeof node);
    /* The backend says what is wrong with the text (its node_parse_error). */
    expect_error_mentioning("NETs_ResolveNode(\"not an address!!\")",
                            NETs_ResolveNode("not an address!!", &node), NET_ERR_PARSE,
                            "neither an IP address nor a host name");
    bad_nodes_core++;
    memset(&other, 0xAA, sizeof other);
    expect_true("a failed resolve leaves *out untouched", memcmp(&node, &other, sizeof node) == 0,
                "");
    expect_error_mentioning("(NETs_ResolveNode)(\"127.0.0.1:99999\")",
                            (NETs_ResolveNode)("127.0.0.1:99999", &node), NET_ERR_PARSE,
                            "port 99999 is out of range 1-65535");
    bad_nodes_core++;
    expect_code("NETs_ResolveNode(\"\")", NETs_ResolveNode("", &node), NET_ERR_PARSE);
    bad_nodes_core++;
    memset(long_text, '1', 300);
    long_text[300] = '\0';
    expect_code("NETs_ResolveNode(300 characters)", NETs_ResolveNode(long_text, &node),
                NET_ERR_TOO_LARGE);
    bad_nodes_boundary++;
    expect_code("NETs_ResolveNode(invalid UTF-8)", NETs_ResolveNode("127.0.0.1:\xff", &node),
                NET_ERR_INVALID_ARGUMENT);
    bad_nodes_boundary++;

    expect_code("NETs_ResolveNode(\"127.0.0.1:7000\")", NETs_ResolveNode("127.0.0.1:7000", valid),
                NET_OK);
    expect_code("NETs_ResolveNode(\"127.0.0.1:7001\")", NETs_ResolveNode("127.0.0.1:7001", &other),
                NET_OK);

    expect_code("NETs_PrintNode(NULL, ...)", NETs_PrintNode(NULL, text, sizeof text),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("(NETs_PrintNode)(node, NULL, 64)", (NETs_PrintNode)(valid, NULL, sizeof text),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("NETs_PrintNode(node, out, 0)", NETs_PrintNode(valid, text, 0),
                NET_ERR_BUFFER_TOO_SMALL);
    expect_code("NETs_PrintNode(node, out, SIZE_MAX)", NETs_PrintNode(valid, text, SIZE_MAX),
                NET_ERR_INVALID_ARGUMENT);
    memset(text, 'X', sizeof text);
    expect_code("NETs_PrintNode(node, out, 4)", NETs_PrintNode(valid, text, 4),
                NET_ERR_BUFFER_TOO_SMALL);
    expect_true("a too-small print buffer is left untouched",
                text[0] == 'X' && text[1] == 'X' && text[2] == 'X' && text[3] == 'X', "");
    rc = NETs_PrintNode(valid, text, 15); /* "127.0.0.1:7000" is 14 bytes + NUL */
    expect_true("NETs_PrintNode with an exact-size buffer",
                rc == 14 && strcmp(text, "127.0.0.1:7000") == 0, text);
    memset(&garbage, 0xFF, sizeof garbage);
    expect_code("NETs_PrintNode(a node of 0xFF bytes)", NETs_PrintNode(&garbage, text, sizeof text),
                NET_ERR_PARSE);

    expect_code("NETs_CompareNodes(NULL, b)", NETs_CompareNodes(NULL, valid),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("(NETs_CompareNodes)(a, NULL)", (NETs_CompareNodes)(valid, NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("NETs_CompareNodes(a, a)", NETs_CompareNodes(valid, valid), 0);
    ab = NETs_CompareNodes(valid, &other);
    ba = (NETs_CompareNodes)(&other, valid);
    expect_true("NETs_CompareNodes orders two nodes as -1/1 both ways",
                (ab == -1 && ba == 1) || (ab == 1 && ba == -1), "");

    expect_code("NETs_LocalNode(NULL)", NETs_LocalNode(NULL), NET_ERR_INVALID_ARGUMENT);
    expect_code("(NETs_LocalNode)(NULL)", (NETs_LocalNode)(NULL), NET_ERR_INVALID_ARGUMENT);
}

/* The largest payload of the active backend, from `status`. */
static long max_payload(void)
{
    return status_number("max payload ");
}

static void check_datagrams(void)
{
    NET_Node me, from, garbage;
    unsigned char small[100], buf[2048];
    unsigned char *big;
    long max = max_payload();
    long long deadline;
    int32_t rc = 0;
    char detail[200];
    int i;

    snprintf(detail, sizeof detail, "%ld bytes", max);
    expect_true("status shows the backend's max payload", max > 100 && max < 65536, detail);
    expect_code("NETs_LocalNode(&me)", NETs_LocalNode(&me), NET_OK);
    for (i = 0; i < (int)sizeof small; i++) {
        small[i] = (unsigned char)(i * 3 + 1);
    }

    expect_code("NETs_SendDatagram(NULL, data, 10)", NETs_SendDatagram(NULL, small, 10),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("(NETs_SendDatagram)(me, NULL, 10)", (NETs_SendDatagram)(&me, NULL, 10),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("NETs_SendDatagram(me, data, 0)", NETs_SendDatagram(&me, small, 0),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("NETs_SendDatagram(me, data, SIZE_MAX)", NETs_SendDatagram(&me, small, SIZE_MAX),
                NET_ERR_INVALID_ARGUMENT);
    big = calloc((size_t)max + 1, 1);
    if (big != NULL) {
        expect_code("NETs_SendDatagram(me, data, max payload + 1)",
                    NETs_SendDatagram(&me, big, (size_t)max + 1), NET_ERR_TOO_LARGE);
        expect_code("(NETs_SendDatagram)(me, data, max payload + 1)",
                    (NETs_SendDatagram)(&me, big, (size_t)max + 1), NET_ERR_TOO_LARGE);
        free(big);
    }
    if (max != 1400) {
        /* The brief's example size; on a backend with a larger payload 1401 bytes is valid. */
        unsigned char *b1401 = calloc(1401, 1);
        if (b1401 != NULL) {
            rc = NETs_SendDatagram(&me, b1401, 1401);
            expect_true("NETs_SendDatagram(me, data, 1401) matches the max payload",
                        max < 1401 ? rc == NET_ERR_TOO_LARGE : rc == NET_OK, "");
            free(b1401);
        }
    }
    memset(&garbage, 0xFF, sizeof garbage);
    expect_code("NETs_SendDatagram(a node of 0xFF bytes)", NETs_SendDatagram(&garbage, small, 10),
                NET_ERR_INVALID_ARGUMENT);

    expect_code("NETs_ReceiveDatagram(from, NULL, 10)", NETs_ReceiveDatagram(&from, NULL, 10),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("(NETs_ReceiveDatagram)(from, buf, SIZE_MAX)",
                (NETs_ReceiveDatagram)(&from, buf, SIZE_MAX), NET_ERR_INVALID_ARGUMENT);

    /* Drain anything that arrived (the 1401-byte probe), then a datagram that does not fit. */
    while (NETs_ReceiveDatagram(NULL, buf, sizeof buf) > 0) {
    }
    expect_code("NETs_SendDatagram(me, 100 bytes)", NETs_SendDatagram(&me, small, sizeof small),
                NET_OK);
    deadline = check_now_ms() + 3000;
    do {
        NETs_MaintainNet();
        rc = NETs_ReceiveDatagram(&from, buf, 10);
        if (rc == 0) {
            check_sleep_ms(1);
        }
    } while (rc == 0 && check_now_ms() < deadline);
    expect_error_mentioning("NETs_ReceiveDatagram(from, buf, 10) for a 100-byte datagram", rc,
                            NET_ERR_BUFFER_TOO_SMALL, "100");
    rc = (NETs_ReceiveDatagram)(NULL, buf, sizeof small);
    expect_true("the datagram stayed queued and comes whole with a big enough buffer (from NULL)",
                rc == (int32_t)sizeof small && memcmp(buf, small, sizeof small) == 0, "");
    expect_code("NETs_ReceiveDatagram when nothing waits", NETs_ReceiveDatagram(&from, buf, 64),
                0);
}

static void check_protocol_calls(void)
{
    /* The peer-to-peer protocol is selected by default; before connecting, the game calls say
     * so. A connect starts (the outcome arrives as an event); a second one is refused. */
    expect_code("NETs_Join() before connecting", NETs_Join(), NET_ERR_NOT_CONNECTED);
    expect_code("(NETs_Join)() before connecting", (NETs_Join)(), NET_ERR_NOT_CONNECTED);
    expect_code("NETs_Unjoin(1) before connecting", NETs_Unjoin(1), NET_ERR_NOT_CONNECTED);
    expect_code("(NETs_Unjoin)(255) before connecting", (NETs_Unjoin)(255), NET_ERR_NOT_CONNECTED);
    expect_code("NETs_UpdateName() before connecting", NETs_UpdateName(), NET_ERR_NOT_CONNECTED);
    expect_code("(NETs_UpdateName)() before connecting", (NETs_UpdateName)(), NET_ERR_NOT_CONNECTED);
    expect_code("NETs_Disconnect() before connecting", NETs_Disconnect(), NET_ERR_NOT_CONNECTED);
    expect_code("(NETs_Disconnect)() before connecting", (NETs_Disconnect)(), NET_ERR_NOT_CONNECTED);
    expect_code("NETs_Connect()", NETs_Connect(), NET_OK);
    expect_code("(NETs_Connect)() while connecting", (NETs_Connect)(), NET_ERR_STATE);
    expect_code("NETs_Disconnect() while connecting", NETs_Disconnect(), NET_OK);
}

static void check_logging(void)
{
    int counter = 0;
    NET_Node node;

    expect_code("NET_SetLogCallback(level 6)", NET_SetLogCallback(NULL, NULL, 6),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("NET_SetLogCallback(level -1)", NET_SetLogCallback(NULL, NULL, -1),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("NET_SetLogCallback(callback, debug)",
                NET_SetLogCallback(count_log_line, &counter, NET_LOG_DEBUG), NET_OK);
    NETs_ResolveNode("not an address either", &node); /* a failure is logged at debug level */
    bad_nodes_core++;
    expect_true("the log callback got one-line messages with its user pointer",
                counter > 0 && counter == log_lines && log_lines_multiline == 0, "");
    expect_code("NET_SetLogCallback(NULL, warn)", NET_SetLogCallback(NULL, NULL, NET_LOG_WARN),
                NET_OK);
    counter = 0;
    NETs_ResolveNode("still not an address", &node);
    bad_nodes_core++;
    expect_true("after NET_SetLogCallback(NULL) the callback is no longer called", counter == 0,
                "");
}

/* The common C idiom printf("%d %s", NET_Foo(), NET_GetLastError()) may call NET_GetLastError
 * first (argument order is unspecified) and read the pointer after NET_Foo failed again: the
 * pointer must stay readable (the text is replaced, not freed), so such a line prints the old
 * or the new message, never freed memory (ASan and valgrind would see a read after free). */
static void check_last_error_pointer(void)
{
    const char *held;
    char detail[300];

    expect_code("NET_PollEvent(NULL) (first failure)", NET_PollEvent(NULL),
                NET_ERR_INVALID_ARGUMENT);
    held = NET_GetLastError();
    expect_code("NET_SetPlayerName(NULL) (second failure)", NET_SetPlayerName(NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_true("a NET_GetLastError() pointer stays valid across the next failure",
                held == NET_GetLastError(), "");
    snprintf(detail, sizeof detail, "held pointer reads \"%s\"", held);
    expect_true("the held pointer reads the newest message", strcmp(held, "player name is NULL") == 0,
                detail);
}

int main(void)
{
    const NET_JumpTable *table = NET_GetJumpTable();
    NET_Node valid;
    char out[OUT_CAP];

    expect_true("NET_GetLastError() is \"\" before any failure",
                NET_GetLastError() != NULL && NET_GetLastError()[0] == '\0', "");
    expect_true("NET_GetAbiVersion() == NET_ABI_VERSION", NET_GetAbiVersion() == NET_ABI_VERSION,
                "");
    expect_true("NET_GetJumpTable() is not NULL before NET_Init", table != NULL, "");
    NET_Shutdown();
    expect_true("NET_Shutdown() before NET_Init returns", 1, "");
    expect_all_calls_fail("before NET_Init", NET_ERR_NOT_INITIALIZED);
    check_last_error_pointer();
    expect_code("NET_SetLogCallback(level 9) before NET_Init", NET_SetLogCallback(NULL, NULL, 9),
                NET_ERR_INVALID_ARGUMENT);

    expect_code("NET_Init()", NET_Init(), NET_OK);
    expect_code("NET_Init() again", NET_Init(), NET_OK);
    use_udp_on_loopback();

    check_console();
    check_nodes(&valid);
    check_datagrams();
    check_protocol_calls();
    check_logging();
    expect_counted("status counts the bad console lines", "bad console lines ", bad_lines_core,
                   bad_lines_boundary);
    expect_counted("status counts the bad node texts", "bad node texts ", bad_nodes_core,
                   bad_nodes_boundary);
    expect_true("status counts the oversize datagrams", status_number("oversize ") >= 2, "");

    NET_Shutdown();
    expect_all_calls_fail("after NET_Shutdown", NET_ERR_NOT_INITIALIZED);
    NET_Shutdown();
    expect_true("NET_Shutdown() twice returns", 1, "");

    expect_code("NET_Init() after NET_Shutdown", NET_Init(), NET_OK);
    expect_code("net.udp.bind 127.0.0.1 after re-init",
                NET_ConsoleExec("net.udp.bind 127.0.0.1", out, sizeof out), NET_OK);
    expect_code("net.udp.ipv6 0 after re-init",
                NET_ConsoleExec("net.udp.ipv6 0", out, sizeof out), NET_OK);
    expect_code("net.port 0 after re-init", NET_ConsoleExec("net.port 0", out, sizeof out),
                NET_OK);
    expect_code("NETs_LocalNode after re-init", NETs_LocalNode(&valid), NET_OK);
    expect_true("a new instance starts with clean counters", status_number("bad node texts ") == 0,
                "");
    NET_Shutdown();
    return check_finish("api_errors");
}
