/*
 * print_lines.c: a backend that opens, sends and receives nothing, and whose `node_print` writes
 * a text with a line break, a terminal escape, a carriage return and a tab in it. The core must
 * give that text to every caller (NETs_PrintNode, status) as one line without control
 * characters.
 */

#include <string.h>

#include "stub_vtable.h"

static int lines_socket;

static const char lines_text[] = "node\none\033[2J\rtwo\tthree\n";

static int32_t lines_open(const struct NET_BackendOpenParams *params, void **out_socket,
                          char *err, size_t err_len)
{
    (void)params, (void)err, (void)err_len;
    *out_socket = &lines_socket;
    return NET_BACKEND_OK;
}

static int32_t lines_node_print(const struct NET_Node *node, char *out, size_t out_len)
{
    (void)node;
    if (out_len < sizeof lines_text) {
        return NET_BACKEND_ERR_INVALID;
    }
    memcpy(out, lines_text, sizeof lines_text);
    return (int32_t)(sizeof lines_text - 1);
}

static int32_t lines_local_node(void *socket, const struct NET_Node *towards,
                                struct NET_Node *out)
{
    (void)socket, (void)towards;
    memset(out, 0, sizeof *out);
    out->bytes[0] = 'N';
    return NET_BACKEND_OK;
}

static int32_t lines_bound_port(void *socket)
{
    (void)socket;
    return 40003;
}

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.name = "printlines";
    table.open = lines_open;
    table.node_print = lines_node_print;
    table.local_node = lines_local_node;
    table.bound_port = lines_bound_port;
    return &table;
}
