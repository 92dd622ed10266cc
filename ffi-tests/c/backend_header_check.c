/*
 * backend_header_check.c: compiled (not run) by the header test to prove parsec_net_backend.h is
 * valid C99 on its own (without parsec_net.h) under -Wall -Wextra -Wpedantic -Werror.
 */

#include "parsec_net_backend.h"

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    /* Designated initializers, as docs/backend-guide.md says: fields appended to the table
     * later (describe_socket, ...) are NULL without a -Wmissing-field-initializers warning. */
    static const NET_BackendVTable table = {
        .abi_version = NET_BACKEND_ABI_VERSION,
        .size = sizeof(NET_BackendVTable),
        .name = "check",
        .max_payload = 1,
        .capabilities = NET_BACKEND_CAP_BROADCAST,
    };
    NET_Node node = {{0}};
    NET_BackendOpenParams params = {sizeof(NET_BackendOpenParams), 0, 0, ""};
    NET_BackendEntryFn self = parsec_net_backend_entry;

    (void)node, (void)params, (void)self;
    return core_abi_version >= NET_BACKEND_ABI_VERSION ? &table : NULL;
}
