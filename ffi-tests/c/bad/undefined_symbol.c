/*
 * undefined_symbol.c: a backend that calls a function no library defines, as a backend does when
 * its author forgot to link a library it uses (or misspelt a function's name). It is built
 * without -Wl,-z,defs, as shared libraries are by default, so the link succeeds. Loading it must
 * fail with the dynamic linker's reason naming the symbol; with lazy binding it would load, and
 * the first call of its entry would end the whole game ("symbol lookup error").
 */

#include "stub_vtable.h"

/* Defined nowhere. */
extern int parsec_net_test_function_defined_nowhere(void);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    (void)core_abi_version;
    if (parsec_net_test_function_defined_nowhere() != 0) {
        return NULL;
    }
    return &STUB_VTABLE;
}
