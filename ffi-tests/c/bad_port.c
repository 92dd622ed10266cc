/*
 * bad_port.c: switches to the backend given as the only argument (c/bad/port_bad.c) while its
 * `bound_port` returns a real port, -1 and 70000, and checks that the `net.api` reply and
 * `status` show the real port, and for the others say that the backend reported no valid port
 * (with the value) instead of showing port 0. Then UDP works again. Exit status 0 only if every
 * check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "parsec_net.h"

#define OUT_CAP 8192

static void switch_and_check(const char *path, const char *report, const char *want)
{
    char line[OUT_CAP], out[OUT_CAP], what[200];

    if (report != NULL) {
        snprintf(line, sizeof line, "net.badport.report %s", report);
        expect_code(line, NET_ConsoleExec(line, out, sizeof out), NET_OK);
    }
    expect_code("net.api udp first", NET_ConsoleExec("net.api udp", out, sizeof out), NET_OK);
    snprintf(line, sizeof line, "net.api %s", path);
    snprintf(what, sizeof what, "net.api badport (bound_port %s)",
             report != NULL ? report : "real");
    expect_code(what, NET_ConsoleExec(line, out, sizeof out), NET_OK);
    snprintf(what, sizeof what, "the reply says '%s' and not 'on port 0'", want);
    expect_true(what, strstr(out, want) != NULL && strstr(out, "on port 0") == NULL, out);
    expect_code("status", NET_ConsoleExec("status", out, sizeof out), NET_OK);
    snprintf(what, sizeof what, "status says '%s' and not 'on port 0'", want);
    expect_true(what,
                strstr(out, "backend: badport ") != NULL && strstr(out, want) != NULL &&
                    strstr(out, "on port 0") == NULL,
                out);
}

int main(int argc, char **argv)
{
    char out[OUT_CAP], why[300];
    const unsigned char hello[] = "hello after badport";

    if (argc != 2) {
        fprintf(stderr, "usage: bad_port PATH\n");
        return 2;
    }
    expect_code("NET_Init()", NET_Init(), NET_OK);
    use_udp_on_loopback();

    switch_and_check(argv[1], NULL, "on port 40002");
    switch_and_check(argv[1], "-1", "reported no valid port (its bound_port returned -1)");
    switch_and_check(argv[1], "70000",
                     "reported no valid port (its bound_port returned 70000)");
    switch_and_check(argv[1], "0", "reported no valid port (its bound_port returned 0)");

    expect_code("net.api udp after badport", NET_ConsoleExec("net.api udp", out, sizeof out),
                NET_OK);
    expect_true("udp makes a round trip after badport",
                self_echo(hello, sizeof hello, 3000, why, sizeof why), why);
    NET_Shutdown();
    return check_finish("bad_port");
}
