// main.cpp: a C++11 program built against an installed parsec-net with pkg-config, as a game's
// Makefile would (see Makefile beside it): once linked with libparsec_net.so, once with
// libparsec_net.a.
//
// It initializes the library, binds the UDP backend to loopback on a free port, loads the UDP
// backend by name with `net.api udp` (so the loader must find libparsec_backend_udp.so from where
// the library is installed, or from PARSEC_NET_BACKEND_PATH when linked statically), prints the
// console's `backend:` status line (which names the backend file it loaded), sends a datagram to
// the loopback node made from its own node's port, receives it, and prints OK. Any failure prints
// a FAIL line and exits with status 1.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "parsec_net.h"

namespace {

[[noreturn]] void fail(const std::string &what, const std::string &why)
{
    std::printf("FAIL %s: %s\n", what.c_str(), why.c_str());
    NET_Shutdown();
    std::exit(1);
}

[[noreturn]] void fail(const std::string &what)
{
    fail(what, NET_GetLastError());
}

// Run a console line as a player would type it; returns its reply, fails unless it succeeds.
std::string console(const char *line)
{
    char out[4096];
    if (NET_ConsoleExec(line, out, sizeof out) < 0) {
        fail(std::string("`") + line + "`", out);
    }
    return out;
}

}  // namespace

int main()
{
    if (NET_Init() != NET_OK) {
        fail("NET_Init");
    }
    console("net.udp.bind 127.0.0.1");
    console("net.udp.ipv6 0");
    console("net.port 0");
    console("net.api udp");

    const std::string status = console("status");
    const std::string::size_type at = status.find("backend: ");
    if (at == std::string::npos) {
        fail("status", "no backend line in:\n" + status);
    }
    std::printf("%s\n", status.substr(at, status.find('\n', at) - at).c_str());

    // Our own node, and the loopback node on its port.
    NET_Node me;
    if (NETs_LocalNode(&me) < 0) {
        fail("NETs_LocalNode");
    }
    char text[128];
    if (NETs_PrintNode(&me, text, sizeof text) < 0) {
        fail("NETs_PrintNode");
    }
    const char *port = std::strrchr(text, ':');
    if (port == nullptr) {
        fail("NETs_PrintNode", std::string("no port in the local node '") + text + "'");
    }
    const std::string target = std::string("127.0.0.1") + port;
    NET_Node loopback;
    if (NETs_ResolveNode(target.c_str(), &loopback) < 0) {
        fail("NETs_ResolveNode");
    }
    std::printf("local node %s, sending to %s\n", text, target.c_str());

    const char message[] = "hello from an installed parsec-net (C++, pkg-config)";
    if (NETs_SendDatagram(&loopback, message, sizeof message) < 0) {
        fail("NETs_SendDatagram");
    }
    char buf[2048];
    NET_Node from;
    int32_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (got == 0 && std::chrono::steady_clock::now() < deadline) {
        NETs_MaintainNet();
        got = NETs_ReceiveDatagram(&from, buf, sizeof buf);
        if (got == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    if (got < 0) {
        fail("NETs_ReceiveDatagram");
    }
    if (got != static_cast<int32_t>(sizeof message) || std::memcmp(buf, message, sizeof message) != 0) {
        fail("NETs_ReceiveDatagram", "the datagram did not come back whole (" +
                                         std::to_string(got) + " bytes)");
    }
    NET_Shutdown();
    std::printf("OK\n");
    return 0;
}
