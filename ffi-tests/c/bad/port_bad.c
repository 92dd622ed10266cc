/*
 * port_bad.c: a backend that opens, sends and receives nothing, and whose `bound_port` returns
 * the value of its option `report` (`net.badport.report N`: -1, 70000, ...), or the port it was
 * asked for (40002 for any port) without the option. The core must not show a value that is no
 * port as a port.
 */

#include <stdlib.h>
#include <string.h>

#include "stub_vtable.h"

static int badport_socket;
static long badport_report;

static int32_t badport_open(const struct NET_BackendOpenParams *params, void **out_socket,
                            char *err, size_t err_len)
{
    const char *report = params->options != NULL ? strstr(params->options, "report=") : NULL;

    (void)err, (void)err_len;
    if (report != NULL && (report == params->options || report[-1] == '\n')) {
        badport_report = strtol(report + strlen("report="), NULL, 10);
    } else {
        badport_report = params->port != 0 ? params->port : 40002;
    }
    *out_socket = &badport_socket;
    return NET_BACKEND_OK;
}

static int32_t badport_node_print(const struct NET_Node *node, char *out, size_t out_len)
{
    (void)node;
    if (out_len < 8) {
        return NET_BACKEND_ERR_INVALID;
    }
    memcpy(out, "badport", 8);
    return 7;
}

static int32_t badport_local_node(void *socket, const struct NET_Node *towards,
                                  struct NET_Node *out)
{
    (void)socket, (void)towards;
    memset(out, 0, sizeof *out);
    out->bytes[0] = 'P';
    return NET_BACKEND_OK;
}

static int32_t badport_bound_port(void *socket)
{
    (void)socket;
    return (int32_t)badport_report;
}

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.name = "badport";
    table.open = badport_open;
    table.node_print = badport_node_print;
    table.local_node = badport_local_node;
    table.bound_port = badport_bound_port;
    return &table;
}
