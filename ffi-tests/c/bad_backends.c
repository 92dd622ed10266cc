/*
 * bad_backends.c: tries to switch to each broken backend given on the command line and checks
 * that the switch fails with the right code and a one-line message naming the problem, and that
 * the UDP backend stays active and loses nothing: a datagram sent to ourselves before the attempt
 * still arrives after it, and a new one makes the round trip.
 *
 *   usage: bad_backends KIND=PATH ...
 *   KIND:  missing | notlib | noentry | nullentry | newer | small | nullsend | openfails |
 *          opennosocket | undefsym | abizero | payloadzero | payloadhuge | namebad | nullopen
 *
 * Exit status 0 only if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parsec_net.h"

#define OUT_CAP 4096

/* What each kind of broken backend must be refused with. */
struct bad_kind {
    const char *kind;
    int32_t code;
    const char *needle; /* must appear in the message */
};

static const struct bad_kind KINDS[] = {
    {"missing", NET_ERR_BACKEND_LOAD, "no such file"},
    {"notlib", NET_ERR_BACKEND_LOAD, "not a loadable library"},
    {"noentry", NET_ERR_BACKEND_LOAD, "exports no parsec_net_backend_entry"},
    {"nullentry", NET_ERR_BACKEND_LOAD, "returned NULL"},
    {"newer", NET_ERR_BACKEND_LOAD, "newer than"},
    {"small", NET_ERR_BACKEND_LOAD, "smaller than"},
    {"nullsend", NET_ERR_BACKEND_LOAD, "no 'send' function"},
    /* open_fails.c's open writes this reason and returns NET_BACKEND_ERR_UNSUPPORTED. */
    {"openfails", NET_ERR_BACKEND_LOAD, "never opens a socket"},
    /* open_no_socket.c's open returns NET_BACKEND_OK with a NULL socket. */
    {"opennosocket", NET_ERR_BACKEND_LOAD, "said OK but gave no socket"},
    /* undefined_symbol.c calls a function no library defines: the dynamic linker's reason. */
    {"undefsym", NET_ERR_BACKEND_LOAD, "undefined symbol: parsec_net_test_function_defined_nowhere"},
    {"abizero", NET_ERR_BACKEND_LOAD, "reports backend ABI version 0, which does not exist"},
    {"payloadzero", NET_ERR_BACKEND_LOAD, "maximum payload of 0 bytes (must be 1-65507)"},
    {"payloadhuge", NET_ERR_BACKEND_LOAD, "maximum payload of 4294967295 bytes (must be 1-65507)"},
    {"namebad", NET_ERR_BACKEND_LOAD, "vtable name is not 1-31 printable ASCII characters"},
    {"nullopen", NET_ERR_BACKEND_LOAD, "no 'open' function"},
};

static const struct bad_kind *find_kind(const char *kind, size_t len)
{
    size_t i;

    for (i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
        if (strlen(KINDS[i].kind) == len && strncmp(KINDS[i].kind, kind, len) == 0) {
            return &KINDS[i];
        }
    }
    return NULL;
}

/* The printed local node, or "?" (into `text`). */
static void local_node_text(char *text, size_t len)
{
    NET_Node me;

    if (NETs_LocalNode(&me) != NET_OK || NETs_PrintNode(&me, text, len) < 0) {
        snprintf(text, len, "?");
    }
}

static void try_bad_backend(const struct bad_kind *kind, const char *path, unsigned seq)
{
    char line[OUT_CAP], out[OUT_CAP], label[256], why[300], before[128], after[128];
    unsigned char pending[32], fresh[32];
    int32_t rc;

    memset(pending, (int)(seq & 0xff), sizeof pending);
    snprintf((char *)pending, sizeof pending, "pending %u", seq);
    memset(fresh, (int)(seq & 0xff), sizeof fresh);
    snprintf((char *)fresh, sizeof fresh, "fresh %u", seq);

    local_node_text(before, sizeof before);
    snprintf(label, sizeof label, "%s: a datagram to ourselves is sent before the switch",
             kind->kind);
    expect_true(label, send_to_self(pending, sizeof pending, why, sizeof why), why);

    snprintf(line, sizeof line, "net.api %s", path);
    rc = NET_ConsoleExec(line, out, sizeof out);
    snprintf(label, sizeof label, "%s: net.api %s", kind->kind, path);
    expect_error_mentioning(label, rc, kind->code, kind->needle);
    snprintf(label, sizeof label, "%s: the console shows the same one line, naming udp as kept",
             kind->kind);
    expect_true(label, strcmp(out, NET_GetLastError()) == 0 && strstr(out, "udp") != NULL, out);
    rc = NET_ConsoleExec("status", out, sizeof out);
    snprintf(label, sizeof label, "%s: udp is still the active backend", kind->kind);
    expect_true(label, rc == NET_OK && strstr(out, "backend: udp ") != NULL, "");

    snprintf(label, sizeof label, "%s: the datagram sent before the switch arrives", kind->kind);
    expect_true(label, receive_expected(pending, sizeof pending, 3000, why, sizeof why), why);
    snprintf(label, sizeof label, "%s: udp still makes a round trip", kind->kind);
    expect_true(label, self_echo(fresh, sizeof fresh, 3000, why, sizeof why), why);

    local_node_text(after, sizeof after);
    snprintf(label, sizeof label, "%s: the local node (port) is the same after the failed switch",
             kind->kind);
    expect_true(label, strcmp(before, after) == 0, after);
}

int main(int argc, char **argv)
{
    char out[OUT_CAP], why[300];
    const unsigned char hello[] = "hello before any bad backend";
    int i, attempts = 0;
    long counted;
    const char *at;

    expect_code("NET_Init()", NET_Init(), NET_OK);
    use_udp_on_loopback();
    expect_true("udp makes a round trip on loopback",
                self_echo(hello, sizeof hello, 3000, why, sizeof why), why);

    for (i = 1; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        const struct bad_kind *kind =
            eq != NULL ? find_kind(argv[i], (size_t)(eq - argv[i])) : NULL;

        if (kind == NULL) {
            expect_true("argument is KIND=PATH with a known KIND", 0, argv[i]);
            continue;
        }
        try_bad_backend(kind, eq + 1, (unsigned)i);
        attempts++;
    }

    /* Every refused net.api line was a bad console line. */
    NET_ConsoleExec("status", out, sizeof out);
    at = strstr(out, "bad console lines ");
    counted = at != NULL ? strtol(at + strlen("bad console lines "), NULL, 10) : -1;
    snprintf(why, sizeof why, "%ld counted for %d refused switches", counted, attempts);
    expect_true("status counts each refused net.api as a bad console line", counted == attempts,
                why);
    at = strstr(out, "switches: ");
    printf("status after the attempts: %.*s\n", at != NULL ? (int)strcspn(at, "\n") : 0,
           at != NULL ? at : "");

    expect_code("net.api udp (a real switch) still works",
                NET_ConsoleExec("net.api udp", out, sizeof out), NET_OK);
    expect_true("udp makes a round trip after switching to it again",
                self_echo(hello, sizeof hello, 3000, why, sizeof why), why);
    NET_Shutdown();
    return check_finish("bad_backends");
}
