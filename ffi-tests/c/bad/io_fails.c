/*
 * io_fails.c: a backend that opens, but whose every receive fails with NET_BACKEND_ERR_IO and
 * every send with NET_BACKEND_ERR_UNREACHABLE, each explained by `last_error` with a line that
 * has a line break and a terminal escape in it. The core must count the errors and show the
 * latest reason of each kind in `status`, as one line.
 */

#include <string.h>

#include "stub_vtable.h"

static int fails_socket;
static uint16_t fails_port;
static char fails_error[128];

static int32_t fails_open(const struct NET_BackendOpenParams *params, void **out_socket,
                          char *err, size_t err_len)
{
    (void)err, (void)err_len;
    fails_port = params->port != 0 ? params->port : 40001;
    fails_error[0] = '\0';
    *out_socket = &fails_socket;
    return NET_BACKEND_OK;
}

static int32_t fails_send(void *socket, const struct NET_Node *to, const uint8_t *data,
                          size_t len)
{
    (void)socket, (void)to, (void)data;
    snprintf(fails_error, sizeof fails_error, "iofails: no route for %u bytes\n\033[1mtry later",
             (unsigned)len);
    return NET_BACKEND_ERR_UNREACHABLE;
}

static int32_t fails_receive(void *socket, struct NET_Node *from, uint8_t *buf, size_t cap)
{
    (void)socket, (void)from, (void)buf, (void)cap;
    snprintf(fails_error, sizeof fails_error, "iofails: cable unplugged\r\nat port %u",
             (unsigned)fails_port);
    return NET_BACKEND_ERR_IO;
}

static int32_t fails_wait(void *socket, uint32_t timeout_ms)
{
    (void)socket, (void)timeout_ms;
    return 1;
}

static int32_t fails_node_print(const struct NET_Node *node, char *out, size_t out_len)
{
    (void)node;
    if (out_len < 6) {
        return NET_BACKEND_ERR_INVALID;
    }
    memcpy(out, "fails", 6);
    return 5;
}

static int32_t fails_node_parse(const char *text, uint16_t default_port, struct NET_Node *out)
{
    (void)default_port;
    if (strcmp(text, "fails") != 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    out->bytes[0] = 'F';
    return NET_BACKEND_OK;
}

static int32_t fails_local_node(void *socket, const struct NET_Node *towards,
                                struct NET_Node *out)
{
    (void)socket, (void)towards;
    memset(out, 0, sizeof *out);
    out->bytes[0] = 'F';
    return NET_BACKEND_OK;
}

static int32_t fails_last_error(void *socket, char *out, size_t out_len)
{
    size_t len = strlen(fails_error);

    (void)socket;
    if (out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    if (len >= out_len) {
        len = out_len - 1;
    }
    memcpy(out, fails_error, len);
    out[len] = '\0';
    return (int32_t)len;
}

static int32_t fails_bound_port(void *socket)
{
    (void)socket;
    return fails_port;
}

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.name = "iofails";
    table.open = fails_open;
    table.send = fails_send;
    table.receive = fails_receive;
    table.wait = fails_wait;
    table.node_print = fails_node_print;
    table.node_parse = fails_node_parse;
    table.local_node = fails_local_node;
    table.last_error = fails_last_error;
    table.bound_port = fails_bound_port;
    return &table;
}
