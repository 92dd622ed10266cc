/*
 * entry_null.c: a backend whose entry function refuses every core ABI version by returning NULL
 * (what a backend does when the core is too old for it). The loader must refuse it cleanly.
 */

#include "parsec_net_backend.h"

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    (void)core_abi_version;
    return NULL;
}
