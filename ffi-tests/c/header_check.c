/*
 * header_check.c: compiled (not run) by the header test to prove parsec_net.h is valid C99 under
 * -Wall -Wextra -Wpedantic -Werror, both with the NETs_ jump-table macros and with
 * PARSEC_NET_STATIC_BIND. Every NETs_ name is used, so each macro expands at least once.
 */

#include "parsec_net.h"

int header_check_uses_every_call(void);

int header_check_uses_every_call(void)
{
    NET_Node a, b;
    char text[64];
    unsigned char data[4] = {0, 1, 2, 3};
    int32_t sum = 0;
    const NET_JumpTable *table = NET_GetJumpTable();

    sum += NET_Init();
    sum += NET_ConsoleExec("status", text, sizeof text);
    sum += NETs_ResolveNode("127.0.0.1:6526", &a);
    sum += NETs_PrintNode(&a, text, sizeof text);
    sum += NETs_LocalNode(&b);
    sum += NETs_CompareNodes(&a, &b);
    sum += NETs_SendDatagram(&a, data, sizeof data);
    sum += NETs_ReceiveDatagram(&b, data, sizeof data);
    sum += NETs_Connect() + NETs_Disconnect() + NETs_Join() + NETs_Unjoin(0) + NETs_UpdateName();
    NETs_MaintainNet();
    sum += NET_SetLogCallback(NULL, NULL, NET_LOG_WARN);
    sum += (int32_t)NET_GetAbiVersion() + (int32_t)table->size + (NET_GetLastError()[0] == '\0');
    NET_Shutdown();
    return sum;
}
