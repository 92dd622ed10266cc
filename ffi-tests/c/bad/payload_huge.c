/*
 * payload_huge.c: a backend announcing a maximum payload of 4294967295 bytes (more than any
 * datagram); the loader must refuse it and say why.
 */

#include "stub_vtable.h"

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    static NET_BackendVTable table;

    (void)core_abi_version;
    table = STUB_VTABLE;
    table.max_payload = 0xFFFFFFFFu;
    return &table;
}
