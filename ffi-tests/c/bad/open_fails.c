/*
 * open_fails.c: a backend that loads and validates but whose open always fails. Switching to it
 * must fail and leave the previous backend working (the core closes the old socket for the switch
 * and has to reopen it).
 */

#include "stub_vtable.h"

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    (void)core_abi_version;
    return &STUB_VTABLE;
}
