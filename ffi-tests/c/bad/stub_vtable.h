/*
 * stub_vtable.h: a complete, valid backend vtable whose functions do nothing useful, shared by the
 * deliberately broken test backends in this directory. Each of them copies STUB_VTABLE and breaks
 * exactly one thing, so the loader's refusal can only be about that one thing.
 */

#ifndef PARSEC_NET_FFI_TESTS_STUB_VTABLE_H
#define PARSEC_NET_FFI_TESTS_STUB_VTABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parsec_net_backend.h"

static int32_t stub_open(const struct NET_BackendOpenParams *params, void **out_socket, char *err,
                         size_t err_len)
{
    (void)params;
    if (out_socket != NULL) {
        *out_socket = NULL;
    }
    if (err != NULL && err_len > 0) {
        snprintf(err, err_len, "the stub backend never opens a socket");
    }
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static void stub_close(void *socket)
{
    (void)socket;
}

static int32_t stub_send(void *socket, const struct NET_Node *to, const uint8_t *data, size_t len)
{
    (void)socket, (void)to, (void)data, (void)len;
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static int32_t stub_receive(void *socket, struct NET_Node *from, uint8_t *buf, size_t cap)
{
    (void)socket, (void)from, (void)buf, (void)cap;
    return 0;
}

static int32_t stub_wait(void *socket, uint32_t timeout_ms)
{
    (void)socket, (void)timeout_ms;
    return 0;
}

static int32_t stub_node_compare(const struct NET_Node *a, const struct NET_Node *b)
{
    (void)a, (void)b;
    return 0;
}

static int32_t stub_node_print(const struct NET_Node *node, char *out, size_t out_len)
{
    (void)node, (void)out, (void)out_len;
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static int32_t stub_node_parse(const char *text, uint16_t default_port, struct NET_Node *out)
{
    (void)text, (void)default_port, (void)out;
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static int32_t stub_broadcast_node(void *socket, uint16_t port, struct NET_Node *out)
{
    (void)socket, (void)port, (void)out;
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static int32_t stub_local_node(void *socket, const struct NET_Node *towards, struct NET_Node *out)
{
    (void)socket, (void)towards, (void)out;
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static int32_t stub_last_error(void *socket, char *out, size_t out_len)
{
    (void)socket;
    if (out != NULL && out_len > 0) {
        out[0] = '\0';
    }
    return 0;
}

static int32_t stub_bound_port(void *socket)
{
    (void)socket;
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static const NET_BackendVTable STUB_VTABLE = {
    .abi_version = NET_BACKEND_ABI_VERSION,
    .size = sizeof(NET_BackendVTable),
    .name = "badstub",
    .max_payload = 512,
    .capabilities = 0,
    .open = stub_open,
    .close = stub_close,
    .send = stub_send,
    .receive = stub_receive,
    .wait = stub_wait,
    .node_compare = stub_node_compare,
    .node_print = stub_node_print,
    .node_parse = stub_node_parse,
    .broadcast_node = stub_broadcast_node,
    .local_node = stub_local_node,
    .last_error = stub_last_error,
    .bound_port = stub_bound_port,
};

#endif /* PARSEC_NET_FFI_TESTS_STUB_VTABLE_H */
