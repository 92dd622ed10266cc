/*
 * jump_table.c: checks the NETs_ jump table as a C caller sees it: NET_GetJumpTable() is not
 * NULL and stable, its header matches this header's NET_ABI_VERSION and sizeof(NET_JumpTable),
 * every entry is set, and a call through it (NETs_Connect without a protocol) returns
 * NET_ERR_NO_PROTOCOL with a message, exactly like the exported function.
 * Exit status 0 only if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "parsec_net.h"

/* Every entry of the table, by name, as an untyped "is it set" test. */
static void expect_entries_set(const NET_JumpTable *t)
{
#define ENTRY(field) expect_true("jump table entry " #field " is set", t->field != NULL, "")
    ENTRY(Connect);
    ENTRY(Disconnect);
    ENTRY(Join);
    ENTRY(Unjoin);
    ENTRY(UpdateName);
    ENTRY(MaintainNet);
    ENTRY(ResolveNode);
    ENTRY(PrintNode);
    ENTRY(CompareNodes);
    ENTRY(LocalNode);
    ENTRY(SendDatagram);
    ENTRY(ReceiveDatagram);
#undef ENTRY
}

int main(void)
{
    const NET_JumpTable *t = NET_GetJumpTable();
    char detail[200];

    expect_true("NET_GetJumpTable() is not NULL", t != NULL, "");
    if (t == NULL) {
        return check_finish("jump_table");
    }
    snprintf(detail, sizeof detail, "table %u, header %u, library %u", (unsigned)t->abi_version,
             (unsigned)NET_ABI_VERSION, (unsigned)NET_GetAbiVersion());
    expect_true("abi_version == NET_ABI_VERSION == NET_GetAbiVersion()",
                t->abi_version == NET_ABI_VERSION && NET_GetAbiVersion() == NET_ABI_VERSION,
                detail);
    snprintf(detail, sizeof detail, "table says %u, sizeof(NET_JumpTable) is %zu",
             (unsigned)t->size, sizeof(NET_JumpTable));
    expect_true("size == sizeof(NET_JumpTable)", t->size == sizeof(NET_JumpTable), detail);
    expect_entries_set(t);

    expect_code("NET_Init()", NET_Init(), NET_OK);
    expect_true("NET_GetJumpTable() returns the same table after NET_Init",
                NET_GetJumpTable() == t, "");
    expect_entries_set(t);
    expect_code("t->Connect() without a protocol", t->Connect(), NET_ERR_NO_PROTOCOL);
    expect_code("NETs_Connect() (the header's macro)", NETs_Connect(), NET_ERR_NO_PROTOCOL);
    expect_code("(NETs_Connect)() (the exported function)", (NETs_Connect)(),
                NET_ERR_NO_PROTOCOL);
    expect_code("t->Unjoin(7) without a protocol", t->Unjoin(7), NET_ERR_NO_PROTOCOL);
    t->MaintainNet();
    expect_true("t->MaintainNet() returns", 1, "");
    NET_Shutdown();
    expect_true("NET_GetJumpTable() is still the same table after NET_Shutdown",
                NET_GetJumpTable() == t, "");
    expect_code("t->Connect() after NET_Shutdown", t->Connect(), NET_ERR_NOT_INITIALIZED);
    return check_finish("jump_table");
}
