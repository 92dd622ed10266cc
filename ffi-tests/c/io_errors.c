/*
 * io_errors.c: switches to the backend given as the only argument (c/bad/io_fails.c), whose
 * receive and send fail with reasons (written with a line break and an escape in them) given by
 * its `last_error`, and checks that `status` shows the latest reason of each kind on one line of
 * its own, only once there was one, and that UDP works after switching back. Exit status 0 only
 * if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parsec_net.h"

#define OUT_CAP 8192

/* The line of `text` that starts with `prefix` (copied into `line`), or NULL. */
static const char *line_starting(const char *text, const char *prefix, char *line, size_t cap)
{
    const char *at = text;
    size_t len;

    while (at != NULL && *at != '\0') {
        const char *end = strchr(at, '\n');

        len = end != NULL ? (size_t)(end - at) : strlen(at);
        if (strncmp(at, prefix, strlen(prefix)) == 0) {
            if (len >= cap) {
                len = cap - 1;
            }
            memcpy(line, at, len);
            line[len] = '\0';
            return line;
        }
        at = end != NULL ? end + 1 : NULL;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    char line[OUT_CAP], out[OUT_CAP], found[600], why[700];
    unsigned char buf[2048];
    const unsigned char hello[] = "hello after the failures";
    NET_Node from, to;
    int32_t rc;
    int i, failed_receives = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: io_errors PATH\n");
        return 2;
    }
    expect_code("NET_Init()", NET_Init(), NET_OK);
    use_udp_on_loopback();
    snprintf(line, sizeof line, "net.api %s", argv[1]);
    expect_code("net.api to the failing backend", NET_ConsoleExec(line, out, sizeof out), NET_OK);

    expect_code("status before any error", NET_ConsoleExec("status", out, sizeof out), NET_OK);
    expect_true("status shows iofails active", strstr(out, "backend: iofails ") != NULL, out);
    expect_true("no 'last receive error' line before a receive failed",
                strstr(out, "last receive error") == NULL, out);
    expect_true("no 'last send error' line before a send failed",
                strstr(out, "last send error") == NULL, out);

    for (i = 0; i < 5; i++) {
        NETs_MaintainNet();
        rc = NETs_ReceiveDatagram(&from, buf, sizeof buf);
        if (rc < 0) {
            failed_receives++;
            expect_true("the receive error is one line naming the backend's reason",
                        is_one_line(NET_GetLastError()) &&
                            strstr(NET_GetLastError(), "cable unplugged") != NULL,
                        NET_GetLastError());
        }
    }
    snprintf(why, sizeof why, "%d of 5 receives failed", failed_receives);
    expect_true("the failing receives reach the caller", failed_receives > 0, why);

    expect_code("status after receive errors", NET_ConsoleExec("status", out, sizeof out),
                NET_OK);
    expect_true("status counts receive errors", strstr(out, "errors: send 0, receive ") != NULL &&
                                                    strstr(out, "receive 0,") == NULL,
                out);
    expect_true("status has a 'last receive error:' line",
                line_starting(out, "last receive error: ", found, sizeof found) != NULL, out);
    expect_true("it gives the backend's reason on one line",
                strstr(found, "iofails receive: cable unplugged") != NULL &&
                    strstr(found, "at port 40001") != NULL,
                found);
    expect_true("still no 'last send error' line", strstr(out, "last send error") == NULL, out);

    expect_code("NETs_ResolveNode(fails)", NETs_ResolveNode("fails", &to), NET_OK);
    rc = NETs_SendDatagram(&to, hello, 5);
    expect_true("the send fails", rc < 0, NET_GetLastError());
    expect_code("status after a send error", NET_ConsoleExec("status", out, sizeof out), NET_OK);
    expect_true("status has a 'last send error:' line",
                line_starting(out, "last send error: ", found, sizeof found) != NULL, out);
    expect_true("it gives the backend's reason on one line",
                strstr(found, "iofails send: no route for 5 bytes") != NULL &&
                    strstr(found, "try later") != NULL,
                found);
    expect_true("status has no carriage return or escape from the backend",
                strchr(out, '\r') == NULL && strchr(out, '\033') == NULL, out);

    expect_code("net.api udp after the failures", NET_ConsoleExec("net.api udp", out, sizeof out),
                NET_OK);
    expect_true("udp makes a round trip after the failures",
                self_echo(hello, sizeof hello, 3000, why, sizeof why), why);
    NET_Shutdown();
    return check_finish("io_errors");
}
