/*
 * open_no_socket.c: a backend whose open returns NET_BACKEND_OK but gives no socket (NULL). The
 * core must refuse it saying so (not "unknown error") and keep the previous backend working.
 */

#include "stub_vtable.h"

static int32_t open_ok_without_socket(const struct NET_BackendOpenParams *params, void **out_socket,
                                      char *err, size_t err_len)
{
    (void)params, (void)err, (void)err_len;
    if (out_socket != NULL) {
        *out_socket = NULL;
    }
    return NET_BACKEND_OK;
}

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.open = open_ok_without_socket;
    return &table;
}
