/*
 * abi_zero.c: a backend whose vtable claims ABI version 0, which never existed; the loader must
 * refuse it and say why.
 */

#include "stub_vtable.h"

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.abi_version = 0;
    return &table;
}
