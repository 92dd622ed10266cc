// header_check.cpp: compiled (not run) by the header test to prove parsec_net.h is valid C++11
// under -Wall -Wextra -Wpedantic -Werror, both with the NETs_ jump-table macros and with
// PARSEC_NET_STATIC_BIND, and that its declarations have C linkage.

#include "parsec_net.h"

#include <cstddef>

int header_check_uses_every_call();

int header_check_uses_every_call()
{
    NET_Node a{}, b{};
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
    sum += NET_SetLogCallback(nullptr, nullptr, NET_LOG_WARN);
    sum += static_cast<int32_t>(NET_GetAbiVersion() + table->size);
    NET_Shutdown();
    return sum;
}
