/*
 * abi_newer.c: a backend that claims a newer backend ABI than the core's
 * (NET_BACKEND_ABI_VERSION + 1); the loader must refuse it by its version.
 */

#include "stub_vtable.h"

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.abi_version = NET_BACKEND_ABI_VERSION + 1;
    return &table;
}
