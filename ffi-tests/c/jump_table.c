/*
 * jump_table.c: checks the NETs_ jump table as a C caller sees it: NET_GetJumpTable() is not
 * NULL and stable, its header matches this header's NET_ABI_VERSION and sizeof(NET_JumpTable),
 * every entry is set, the peer-to-peer protocol is bound after NET_Init, and calls through the
 * table answer exactly like the exported functions (a game call before connecting is refused
 * with NET_ERR_NOT_CONNECTED and a message naming the call; a connect starts and a second one
 * is refused); `net.subsys` rewrites the protocol entries in place (same table, an entry read
 * before the switch still works and serves the new protocol).
 * Exit status 0 only if every check passed.
 */

#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

/* `net.subsys gameserver` rewrites the protocol entries in place: the table stays where it was,
 * its Connect entry changes, and both the new entry and the one read before the switch are
 * served by the gameserver protocol (no net.server: refused saying so). `net.subsys peer` puts
 * the peer-to-peer entries back. */
static void switch_protocol_in_place(const NET_JumpTable *t)
{
    char out[512];
    int32_t (*before)(void) = t->Connect;
    int32_t rc = NET_ConsoleExec("net.subsys gameserver", out, sizeof out);

    expect_true("net.subsys gameserver while not connected",
                rc == NET_OK && strstr(out, "gameserver selected") != NULL, out);
    expect_true("NET_GetJumpTable() is the same table after net.subsys", NET_GetJumpTable() == t,
                "");
    expect_true("net.subsys gameserver rewrote the Connect entry", t->Connect != before, "");
    expect_entries_set(t);
    expect_error_mentioning("t->Connect() on gameserver without net.server", t->Connect(),
                            NET_ERR_INVALID_ARGUMENT, "no server set");
    expect_error_mentioning("the Connect entry read before the switch serves gameserver too",
                            before(), NET_ERR_INVALID_ARGUMENT, "no server set");
    expect_error_mentioning("t->Join() on gameserver before connecting", t->Join(),
                            NET_ERR_NOT_CONNECTED, "join: not connected to a game");
    rc = NET_ConsoleExec("net.subsys peer", out, sizeof out);
    expect_true("net.subsys peer", rc == NET_OK && strstr(out, "peer selected") != NULL, out);
    expect_true("net.subsys peer put the peer-to-peer Connect entry back", t->Connect == before,
                "");
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
    {
        char out[256];
        int32_t rc = NET_ConsoleExec("net.subsys", out, sizeof out);
        expect_true("peer-to-peer is the protocol after NET_Init",
                    rc == NET_OK && strstr(out, "peer") != NULL, out);
        NET_ConsoleExec("net.udp.bind 127.0.0.1", out, sizeof out);
        NET_ConsoleExec("net.port 0", out, sizeof out);
    }
    /* Each protocol call without a game: NET_ERR_NOT_CONNECTED, and the message names the call
     * and says what is missing, the same way for every call. */
    expect_error_mentioning("t->Disconnect() before connecting", t->Disconnect(),
                            NET_ERR_NOT_CONNECTED, "disconnect: not connected to a game");
    expect_error_mentioning("t->Join() before connecting", t->Join(), NET_ERR_NOT_CONNECTED,
                            "join: not connected to a game");
    expect_error_mentioning("t->Unjoin(0) before connecting", t->Unjoin(0),
                            NET_ERR_NOT_CONNECTED, "unjoin: not connected to a game");
    expect_error_mentioning("t->UpdateName() before connecting", t->UpdateName(),
                            NET_ERR_NOT_CONNECTED, "update name: not connected to a game");
    expect_error_mentioning("NETs_Disconnect() (the header's macro) before connecting",
                            NETs_Disconnect(), NET_ERR_NOT_CONNECTED,
                            "disconnect: not connected to a game");
    switch_protocol_in_place(t);
    expect_code("t->Unjoin(7) before connecting", t->Unjoin(7), NET_ERR_NOT_CONNECTED);
    expect_code("(NETs_Unjoin)(7) (the exported function)", (NETs_Unjoin)(7), NET_ERR_NOT_CONNECTED);
    expect_code("t->Connect() starts connecting", t->Connect(), NET_OK);
    expect_code("NETs_Connect() (the header's macro) while connecting", NETs_Connect(),
                NET_ERR_STATE);
    expect_code("(NETs_Connect)() (the exported function) while connecting", (NETs_Connect)(),
                NET_ERR_STATE);
    expect_code("t->Disconnect()", t->Disconnect(), NET_OK);
    t->MaintainNet();
    expect_true("t->MaintainNet() returns", 1, "");
    NET_Shutdown();
    expect_true("NET_GetJumpTable() is still the same table after NET_Shutdown",
                NET_GetJumpTable() == t, "");
    expect_code("t->Connect() after NET_Shutdown", t->Connect(), NET_ERR_NOT_INITIALIZED);
    return check_finish("jump_table");
}
