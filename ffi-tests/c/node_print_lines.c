/*
 * node_print_lines.c: switches to the backend given as the only argument (c/bad/print_lines.c),
 * whose `node_print` writes a line break, an escape, a carriage return and a tab into its text,
 * and checks that NETs_PrintNode gives the game that text as one line without control
 * characters (each one a space, the ends trimmed), with the length it wrote, and that `status`
 * shows the same text on its socket line. Exit status 0 only if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "parsec_net.h"

#define OUT_CAP 8192

static int has_control(const char *text)
{
    for (; *text != '\0'; text++) {
        if ((unsigned char)*text < 0x20 || (unsigned char)*text == 0x7f) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    char line[OUT_CAP], out[OUT_CAP], text[256], why[400];
    const char *want = "node one [2J two three";
    const char *socket_line;
    NET_Node local;
    int32_t rc;

    if (argc != 2) {
        fprintf(stderr, "usage: node_print_lines PATH\n");
        return 2;
    }
    expect_code("NET_Init()", NET_Init(), NET_OK);
    expect_code("net.port 0", NET_ConsoleExec("net.port 0", out, sizeof out), NET_OK);
    snprintf(line, sizeof line, "net.api %s", argv[1]);
    expect_code("net.api printlines", NET_ConsoleExec(line, out, sizeof out), NET_OK);

    expect_code("NETs_LocalNode", NETs_LocalNode(&local), NET_OK);
    rc = NETs_PrintNode(&local, text, sizeof text);
    snprintf(why, sizeof why, "returned %d, text \"%s\" (want \"%s\")", (int)rc,
             rc >= 0 ? text : "", want);
    expect_true("NETs_PrintNode gives one line without control characters",
                rc >= 0 && !has_control(text) && strcmp(text, want) == 0, why);
    expect_true("NETs_PrintNode returns the length it wrote",
                rc >= 0 && (size_t)rc == strlen(text), why);

    expect_code("status", NET_ConsoleExec("status", out, sizeof out), NET_OK);
    socket_line = strstr(out, "socket: open");
    snprintf(line, sizeof line, "socket: open on port 40003, local node %s\n", want);
    expect_true("status shows the same text on its socket line",
                socket_line != NULL && strncmp(socket_line, line, strlen(line)) == 0, out);
    expect_true("status has no escape or carriage return from the backend",
                strchr(out, '\033') == NULL && strchr(out, '\r') == NULL, out);
    NET_Shutdown();
    return check_finish("node_print_lines");
}
