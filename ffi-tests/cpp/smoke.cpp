// smoke.cpp: the C++11 view of parsec-net: the header compiles as C++, and a C++ program can
// initialize, run console commands, send a datagram to itself over UDP on loopback and receive
// it, and shut down. Exit status 0 only if all of that worked.

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "parsec_net.h"

namespace {

int failures = 0;

void check(bool ok, const std::string &what, const std::string &detail = std::string())
{
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ",
                detail.c_str());
    if (!ok) {
        ++failures;
    }
}

// Run a console line; returns its output, and the result code in `rc`.
std::string console(const char *line, int32_t &rc)
{
    char out[4096];
    rc = NET_ConsoleExec(line, out, sizeof out);
    return std::string(out);
}

}  // namespace

int main()
{
    int32_t rc = NET_Init();
    check(rc == NET_OK, "NET_Init()");

    std::string help = console("help", rc);
    check(rc == NET_OK && help.find("net.api") != std::string::npos, "console help lists net.api");
    std::string status = console("status", rc);
    check(rc == NET_OK && status.find("backend: udp") != std::string::npos,
          "console status shows the udp backend");
    console("net.udp.bind 127.0.0.1", rc);
    check(rc == NET_OK, "net.udp.bind 127.0.0.1");
    console("net.udp.ipv6 0", rc);
    check(rc == NET_OK, "net.udp.ipv6 0");
    console("net.port 0", rc);
    check(rc == NET_OK, "net.port 0");

    NET_Node me;
    rc = NETs_LocalNode(&me);
    char text[128] = "";
    const bool printed = rc == NET_OK && NETs_PrintNode(&me, text, sizeof text) > 0;
    check(printed, "NETs_LocalNode and NETs_PrintNode", text);

    const char message[] = "hello from C++";
    rc = NETs_SendDatagram(&me, message, sizeof message);
    check(rc == NET_OK, "NETs_SendDatagram to ourselves", NET_GetLastError());

    char buf[2048];
    NET_Node from;
    int32_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (got == 0 && std::chrono::steady_clock::now() < deadline) {
        NETs_MaintainNet();
        got = NETs_ReceiveDatagram(&from, buf, sizeof buf);
        if (got == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    const bool whole = got == static_cast<int32_t>(sizeof message) &&
                       std::memcmp(buf, message, sizeof message) == 0;
    check(whole, "the datagram came back whole");
    check(NETs_CompareNodes(&from, &me) == 0, "it came from ourselves");

    NET_Shutdown();
    std::printf("smoke: %d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
