/*
 * vtable_small.c: a backend whose vtable says it is only 16 bytes long, smaller than the table of
 * any backend ABI version; the loader must refuse it by its size.
 */

#include "stub_vtable.h"

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.size = 16;
    return &table;
}
