/*
 * receive_lies.c: switches to the backend given as the only argument (c/bad/receive_lies.c),
 * whose receive returns lengths beyond the buffer and unknown negative codes, runs frames on it,
 * and checks that the library delivers nothing, counts the receive errors, and switches back to
 * UDP, which then makes a round trip on loopback. Exit status 0 only if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parsec_net.h"

#define OUT_CAP 4096

int main(int argc, char **argv)
{
    char line[OUT_CAP], out[OUT_CAP], why[300];
    unsigned char buf[2048];
    const unsigned char hello[] = "hello after the liar";
    NET_Node from;
    const char *at;
    long errors;
    int i, delivered = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: receive_lies PATH\n");
        return 2;
    }
    expect_code("NET_Init()", NET_Init(), NET_OK);
    use_udp_on_loopback();
    snprintf(line, sizeof line, "net.api %s", argv[1]);
    expect_code("net.api to the lying backend", NET_ConsoleExec(line, out, sizeof out), NET_OK);

    for (i = 0; i < 40; i++) {
        int32_t rc;

        NETs_MaintainNet();
        rc = NETs_ReceiveDatagram(&from, buf, sizeof buf);
        if (rc > 0) {
            delivered++;
        }
    }
    snprintf(why, sizeof why, "%d datagrams delivered", delivered);
    expect_true("nothing the liar returned is delivered", delivered == 0, why);

    expect_code("status", NET_ConsoleExec("status", out, sizeof out), NET_OK);
    expect_true("status shows the liar active", strstr(out, "backend: liar ") != NULL, out);
    expect_true("status counts no datagram received",
                strstr(out, "received 0 (0 bytes)") != NULL, out);
    at = strstr(out, "errors: send 0, receive ");
    errors = at != NULL ? strtol(at + strlen("errors: send 0, receive "), NULL, 10) : -1;
    snprintf(why, sizeof why, "%ld receive errors counted", errors);
    expect_true("status counts the lies as receive errors", errors >= 4, why);

    expect_code("net.api udp after the liar", NET_ConsoleExec("net.api udp", out, sizeof out),
                NET_OK);
    expect_true("udp makes a round trip after the liar",
                self_echo(hello, sizeof hello, 3000, why, sizeof why), why);
    NET_Shutdown();
    return check_finish("receive_lies");
}
