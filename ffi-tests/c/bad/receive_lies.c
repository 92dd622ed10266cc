/*
 * receive_lies.c: a backend that opens, but whose receive lies: it says a datagram is waiting and
 * returns in turn a length 100 bytes larger than the caller's buffer, INT32_MAX, an unknown
 * negative code and INT32_MIN, never writing more than `cap` bytes. The core must count each as
 * a receive error and deliver nothing, without reading past its buffer.
 */

#include <limits.h>
#include <string.h>

#include "stub_vtable.h"

static int lies_socket;
static uint16_t lies_port;
static unsigned lies_turn;

static int32_t lies_open(const struct NET_BackendOpenParams *params, void **out_socket, char *err,
                         size_t err_len)
{
    (void)err, (void)err_len;
    lies_port = params->port != 0 ? params->port : 40000;
    *out_socket = &lies_socket;
    return NET_BACKEND_OK;
}

static int32_t lies_send(void *socket, const struct NET_Node *to, const uint8_t *data, size_t len)
{
    (void)socket, (void)to, (void)data, (void)len;
    return NET_BACKEND_OK;
}

static int32_t lies_receive(void *socket, struct NET_Node *from, uint8_t *buf, size_t cap)
{
    static const int32_t codes[] = {0, INT32_MAX, -12345, INT32_MIN};
    int32_t code = codes[lies_turn++ % 4];

    (void)socket;
    memset(from, 0, sizeof *from);
    from->bytes[0] = 'L';
    memset(buf, 0x5a, cap);
    return code == 0 ? (int32_t)cap + 100 : code;
}

static int32_t lies_wait(void *socket, uint32_t timeout_ms)
{
    (void)socket, (void)timeout_ms;
    return 1;
}

static int32_t lies_node_print(const struct NET_Node *node, char *out, size_t out_len)
{
    (void)node;
    if (out_len < 5) {
        return NET_BACKEND_ERR_INVALID;
    }
    memcpy(out, "liar", 5);
    return 4;
}

static int32_t lies_local_node(void *socket, const struct NET_Node *towards, struct NET_Node *out)
{
    (void)socket, (void)towards;
    memset(out, 0, sizeof *out);
    out->bytes[0] = 'L';
    return NET_BACKEND_OK;
}

static int32_t lies_bound_port(void *socket)
{
    (void)socket;
    return lies_port;
}

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.name = "liar";
    table.open = lies_open;
    table.send = lies_send;
    table.receive = lies_receive;
    table.wait = lies_wait;
    table.node_print = lies_node_print;
    table.local_node = lies_local_node;
    table.bound_port = lies_bound_port;
    return &table;
}
