/*
 * no_entry.c: a well-formed shared library that is not a parsec-net backend: it exports a
 * function, but not parsec_net_backend_entry. The loader must refuse it by name of the symbol.
 */

#include "parsec_net_backend.h"

NET_BACKEND_EXPORT int parsec_net_backend_entry_is_missing(void);

NET_BACKEND_EXPORT int parsec_net_backend_entry_is_missing(void)
{
    return 42;
}
