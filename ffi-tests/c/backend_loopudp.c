/*
 * backend_loopudp.c: a packet backend written from docs/backend-guide.md and
 * include/parsec_net_backend.h alone, the way a third-party author would: UDP on 127.0.0.1 only.
 * The tests use it as a backend that is not the worked example (backend_unixdgram.c): it can
 * carry the client-server protocols (capabilities NET_BACKEND_CAP_CLIENT_SERVER: a gameserver's
 * UDP port on 127.0.0.1 is reachable through it), has no broadcast, and prints nodes as
 * "127.0.0.1:PORT".
 *
 *   Build: cc -std=c99 -fPIC -shared -fvisibility=hidden -I include \
 *             backend_loopudp.c -o libparsec_backend_loopudp.so
 *
 * Nodes: bytes[0..4] the IPv4 address (network order), bytes[4..6] the port (big-endian), the
 * rest zero. Options: none (unknown keys are ignored).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "parsec_net_backend.h"

#define LU_MAX_PAYLOAD 1200u

typedef struct lu_socket {
    int fd;
    uint16_t port;
    char err[200];
} lu_socket;

static char lu_parse_err[200];

static void lu_set_err(lu_socket *s, const char *what, int code)
{
    snprintf(s->err, sizeof s->err, "%s: %s", what, strerror(code));
}

/* node: bytes[0..4] IPv4 (always 127.0.0.1 here, but stored), bytes[4..6] port big-endian */
static void lu_node(NET_Node *n, uint32_t addr_be, uint16_t port)
{
    memset(n, 0, sizeof *n);
    memcpy(n->bytes, &addr_be, 4);
    n->bytes[4] = (uint8_t)(port >> 8);
    n->bytes[5] = (uint8_t)(port & 0xff);
}

static int32_t lu_open(const NET_BackendOpenParams *params, void **out_socket, char *err,
                       size_t err_len)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    lu_socket *s;
    int fd;

    if (params == NULL || out_socket == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    if (params->size < offsetof(NET_BackendOpenParams, port) + sizeof params->port) {
        if (err != NULL && err_len > 0) {
            snprintf(err, err_len, "loopudp: open parameters too small");
        }
        return NET_BACKEND_ERR_INVALID;
    }
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        if (err != NULL && err_len > 0) {
            snprintf(err, err_len, "loopudp: socket: %s", strerror(errno));
        }
        return NET_BACKEND_ERR_IO;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(params->port);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        if (err != NULL && err_len > 0) {
            snprintf(err, err_len, "loopudp: bind 127.0.0.1:%u: %s", (unsigned)params->port,
                     strerror(errno));
        }
        close(fd);
        return NET_BACKEND_ERR_IO;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        close(fd);
        return NET_BACKEND_ERR_IO;
    }
    s->fd = fd;
    s->port = ntohs(sa.sin_port);
    *out_socket = s;
    return NET_BACKEND_OK;
}

static void lu_close(void *socket)
{
    lu_socket *s = socket;
    if (s != NULL) {
        close(s->fd);
        free(s);
    }
}

static int32_t lu_send(void *socket, const NET_Node *to, const uint8_t *data, size_t len)
{
    lu_socket *s = socket;
    struct sockaddr_in sa;

    if (s == NULL || to == NULL || data == NULL || len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    if (len > LU_MAX_PAYLOAD) {
        return NET_BACKEND_ERR_TOO_LARGE;
    }
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    memcpy(&sa.sin_addr.s_addr, to->bytes, 4);
    sa.sin_port = htons((uint16_t)((to->bytes[4] << 8) | to->bytes[5]));
    if (sendto(s->fd, data, len, 0, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return NET_BACKEND_WOULD_BLOCK;
        }
        lu_set_err(s, "send", errno);
        return NET_BACKEND_ERR_IO;
    }
    return NET_BACKEND_OK;
}

static int32_t lu_receive(void *socket, NET_Node *from, uint8_t *buf, size_t cap)
{
    lu_socket *s = socket;
    uint8_t tmp[65536];
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    ssize_t n;

    if (s == NULL || from == NULL || buf == NULL || cap == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    for (;;) {
        len = sizeof sa;
        n = recvfrom(s->fd, tmp, sizeof tmp, 0, (struct sockaddr *)&sa, &len);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            if (errno == ECONNREFUSED) {
                continue; /* ICMP from an earlier send */
            }
            lu_set_err(s, "receive", errno);
            return NET_BACKEND_ERR_IO;
        }
        if (n == 0 || (size_t)n > cap || sa.sin_family != AF_INET) {
            continue; /* dropped, never truncated */
        }
        break;
    }
    memcpy(buf, tmp, (size_t)n);
    lu_node(from, sa.sin_addr.s_addr, ntohs(sa.sin_port));
    return (int32_t)n;
}

static int32_t lu_wait(void *socket, uint32_t timeout_ms)
{
    lu_socket *s = socket;
    struct pollfd p;
    int rc;

    if (s == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    p.fd = s->fd;
    p.events = POLLIN;
    p.revents = 0;
    rc = poll(&p, 1, timeout_ms > 100000u ? 100000 : (int)timeout_ms);
    if (rc < 0) {
        return errno == EINTR ? 0 : NET_BACKEND_ERR_IO;
    }
    return rc > 0 ? 1 : 0;
}

static int32_t lu_node_compare(const NET_Node *a, const NET_Node *b)
{
    if (a == NULL || b == NULL) {
        return 0;
    }
    return memcmp(a->bytes, b->bytes, NET_NODE_SIZE);
}

static int32_t lu_node_print(const NET_Node *node, char *out, size_t out_len)
{
    char ip[INET_ADDRSTRLEN];
    int n;

    if (node == NULL || out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    if (inet_ntop(AF_INET, node->bytes, ip, sizeof ip) == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    n = snprintf(out, out_len, "%s:%u", ip, (unsigned)((node->bytes[4] << 8) | node->bytes[5]));
    if (n < 0 || (size_t)n >= out_len) {
        return NET_BACKEND_ERR_TOO_LARGE;
    }
    return n;
}

static int32_t lu_node_parse(const char *text, uint16_t default_port, NET_Node *out)
{
    char host[64];
    const char *colon;
    unsigned long port = default_port;
    struct in_addr a;
    char *end;

    lu_parse_err[0] = '\0';
    if (text == NULL || out == NULL) {
        snprintf(lu_parse_err, sizeof lu_parse_err, "no text");
        return NET_BACKEND_ERR_INVALID;
    }
    colon = strchr(text, ':');
    if (colon == NULL) {
        colon = text + strlen(text);
    } else {
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || port == 0 || port > 65535) {
            snprintf(lu_parse_err, sizeof lu_parse_err, "port '%s' is not 1-65535", colon + 1);
            return NET_BACKEND_ERR_INVALID;
        }
    }
    if ((size_t)(colon - text) >= sizeof host) {
        snprintf(lu_parse_err, sizeof lu_parse_err, "address too long");
        return NET_BACKEND_ERR_INVALID;
    }
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    if (inet_pton(AF_INET, host, &a) != 1) {
        snprintf(lu_parse_err, sizeof lu_parse_err, "'%s' is not an IPv4 address", host);
        return NET_BACKEND_ERR_INVALID;
    }
    if (port == 0) {
        snprintf(lu_parse_err, sizeof lu_parse_err, "no port");
        return NET_BACKEND_ERR_INVALID;
    }
    lu_node(out, a.s_addr, (uint16_t)port);
    return NET_BACKEND_OK;
}

static int32_t lu_broadcast_node(void *socket, uint16_t port, NET_Node *out)
{
    (void)socket;
    (void)port;
    (void)out;
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static int32_t lu_local_node(void *socket, const NET_Node *towards, NET_Node *out)
{
    lu_socket *s = socket;
    (void)towards;
    if (s == NULL || out == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    lu_node(out, htonl(INADDR_LOOPBACK), s->port);
    return NET_BACKEND_OK;
}

static int32_t lu_last_error(void *socket, char *out, size_t out_len)
{
    lu_socket *s = socket;
    if (s == NULL || out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    snprintf(out, out_len, "%s", s->err);
    return (int32_t)strlen(out);
}

static int32_t lu_bound_port(void *socket)
{
    lu_socket *s = socket;
    return s == NULL ? NET_BACKEND_ERR_INVALID : (int32_t)s->port;
}

static int32_t lu_node_parse_error(char *out, size_t out_len)
{
    if (out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    snprintf(out, out_len, "%s", lu_parse_err);
    return (int32_t)strlen(out);
}

static int32_t lu_describe_socket(void *socket, char *out, size_t out_len)
{
    lu_socket *s = socket;
    if (s == NULL || out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    snprintf(out, out_len, "loopback UDP 127.0.0.1:%u", (unsigned)s->port);
    return (int32_t)strlen(out);
}

static const NET_BackendVTable LU_VTABLE = {
    .abi_version = NET_BACKEND_ABI_VERSION,
    .size = sizeof(NET_BackendVTable),
    .name = "loopudp",
    .max_payload = LU_MAX_PAYLOAD,
    .capabilities = NET_BACKEND_CAP_CLIENT_SERVER,
    .open = lu_open,
    .close = lu_close,
    .send = lu_send,
    .receive = lu_receive,
    .wait = lu_wait,
    .node_compare = lu_node_compare,
    .node_print = lu_node_print,
    .node_parse = lu_node_parse,
    .broadcast_node = lu_broadcast_node,
    .local_node = lu_local_node,
    .last_error = lu_last_error,
    .bound_port = lu_bound_port,
    .node_parse_error = lu_node_parse_error,
    .describe_socket = lu_describe_socket,
};

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    return core_abi_version >= 1 ? &LU_VTABLE : NULL;
}
