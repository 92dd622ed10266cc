/*
 * backend_unixdgram.c: a complete parsec-net packet backend written in C99, and the worked
 * example of the backend-authoring guide.
 *
 * It carries datagrams over AF_UNIX SOCK_DGRAM sockets in Linux's abstract socket namespace, so
 * it needs no network interface and leaves no files behind. Two processes on one host (or two
 * instances of parsec-net in one process) can talk through it.
 *
 *   Build: cc -std=c99 -fPIC -shared -fvisibility=hidden -I include \
 *             backend_unixdgram.c -o libparsec_backend_unixdgram.so
 *   Use:   net.api unixdgram   (found through PARSEC_NET_BACKEND_PATH or beside the core)
 *          net.api /path/to/libparsec_backend_unixdgram.so
 *
 * Nodes (the 32 opaque bytes of NET_Node, always canonical: unused bytes are zero):
 *   bytes[0]    = 'U'
 *   bytes[1..3] = port, big-endian, 1..65535
 *   bytes[3..]  = 0
 * A node names the socket bound to the abstract address "\0" PREFIX "/" PORT, where PREFIX is
 * the `prefix` option (default "parsec-net-unixdgram"). Sockets with different prefixes cannot
 * see each other, which keeps parallel test runs apart.
 *
 * Text forms of a node:
 *   printed: "unix:7001"
 *   parsed:  "unix:7001" or "7001"; "unix:" alone means default_port (the port the core is
 *            configured with) and is refused when that is 0. Anything else is refused, and
 *            node_parse_error says why ("port 65536 is not 1-65535").
 *
 * Options (key=value lines, from the console variables net.unixdgram.KEY; unknown keys are
 * ignored, an empty value means "not set", the first line of a key wins):
 *   prefix=NAME   1-64 printable ASCII characters other than space.
 *
 * Behaviour worth knowing:
 * - open with port 0 picks a free port by trying random ports 20000-60999.
 * - Sends never block: a full receive queue at the peer (net.unix.max_dgram_qlen datagrams, 10
 *   by default on Linux) gives NET_BACKEND_WOULD_BLOCK and the core queues the datagram.
 * - A send to a port nobody has bound gives NET_BACKEND_ERR_UNREACHABLE.
 * - A received datagram that does not fit the caller's buffer, is empty, or comes from a socket
 *   outside this prefix (so has no node) is dropped and counted, never delivered truncated.
 * - No broadcast and no client-server protocols (capabilities 0).
 *
 * Only parsec_net_backend_entry is exported (build with -fvisibility=hidden); everything else is
 * static. Every function checks its pointers. The core serializes calls into one backend, so
 * nothing here is locked.
 */

#define _GNU_SOURCE /* SOCK_NONBLOCK, SOCK_CLOEXEC, MSG_NOSIGNAL and the GNU strerror_r */

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "parsec_net_backend.h"

#define UD_NAME "unixdgram"
#define UD_MAX_PAYLOAD 1400u
#define UD_DEFAULT_PREFIX "parsec-net-unixdgram"
#define UD_MAX_PREFIX 64
#define UD_NODE_TAG 'U'
#define UD_RANDOM_PORT_FIRST 20000u
#define UD_RANDOM_PORT_LAST 60999u
#define UD_BIND_ATTEMPTS 256
#define UD_ERROR_LEN 256
/* Most unusable datagrams (oversize, empty, foreign) one receive call skips before it returns 0;
 * the rest are looked at by the next call, so one call never spins for long. */
#define UD_RECEIVE_SKIP_LIMIT 64

/* One open socket: the handle `open` gives to the core. */
typedef struct ud_socket {
    int fd;
    uint16_t port;
    char prefix[UD_MAX_PREFIX + 1];
    char last_error[UD_ERROR_LEN];
    unsigned long dropped_oversize;
    unsigned long dropped_unusable;
} ud_socket;

/* ----- small helpers ------------------------------------------------------------------------ */

/* printf into a caller's buffer of `out_len` bytes (may be NULL or 0), truncating and always
 * NUL-terminating. Returns the number of bytes written without the NUL. */
static size_t write_text(char *out, size_t out_len, const char *format, ...)
{
    va_list args;
    int n;

    if (out == NULL || out_len == 0) {
        return 0;
    }
    va_start(args, format);
    n = vsnprintf(out, out_len, format, args);
    va_end(args);
    if (n < 0) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)n < out_len ? (size_t)n : out_len - 1;
}

/* Record a one-line description of the socket's latest error (returned by `last_error`). */
static void set_error(ud_socket *s, const char *format, ...)
{
    va_list args;

    va_start(args, format);
    if (vsnprintf(s->last_error, sizeof s->last_error, format, args) < 0) {
        s->last_error[0] = '\0';
    }
    va_end(args);
}

/* Record "WHAT: <system error text>" as the socket's latest error. */
static void set_os_error(ud_socket *s, const char *what, int err)
{
    char buf[128];
    const char *text = strerror_r(err, buf, sizeof buf); /* GNU form: returns the text */

    set_error(s, "%s: %s (errno %d)", what, text, err);
}

/* ----- nodes and addresses ------------------------------------------------------------------ */

static void node_encode(uint16_t port, NET_Node *out)
{
    memset(out->bytes, 0, sizeof out->bytes);
    out->bytes[0] = (uint8_t)UD_NODE_TAG;
    out->bytes[1] = (uint8_t)(port >> 8);
    out->bytes[2] = (uint8_t)(port & 0xffu);
}

/* The port of a valid, canonical node; 0 if the node is not one of ours. */
static uint16_t node_port(const NET_Node *node)
{
    size_t i;
    uint16_t port;

    if (node->bytes[0] != (uint8_t)UD_NODE_TAG) {
        return 0;
    }
    for (i = 3; i < sizeof node->bytes; i++) {
        if (node->bytes[i] != 0) {
            return 0;
        }
    }
    port = (uint16_t)((node->bytes[1] << 8) | node->bytes[2]);
    return port;
}

/* Build the abstract socket address "\0" PREFIX "/" PORT. Returns 0, or -1 if it does not fit. */
static int make_address(const char *prefix, uint16_t port, struct sockaddr_un *addr,
                        socklen_t *addr_len)
{
    int n;

    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    /* sun_path[0] stays '\0': that selects the abstract namespace. */
    n = snprintf(addr->sun_path + 1, sizeof addr->sun_path - 1, "%s/%u", prefix, (unsigned)port);
    if (n < 0 || (size_t)n >= sizeof addr->sun_path - 1) {
        return -1;
    }
    /* An abstract name is exactly the bytes counted here; the NUL snprintf wrote is not part
     * of it. */
    *addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    return 0;
}

/* The port of a sender address of the form "\0" PREFIX "/" PORT (PORT canonical decimal,
 * 1..65535); 0 for any other address (another prefix, an unbound or filesystem socket). */
static uint16_t address_port(const ud_socket *s, const struct sockaddr_un *addr,
                             socklen_t addr_len)
{
    const size_t path_at = offsetof(struct sockaddr_un, sun_path);
    const size_t prefix_len = strlen(s->prefix);
    const char *name;
    size_t name_len, i;
    unsigned long port = 0;

    if (addr->sun_family != AF_UNIX || (size_t)addr_len <= path_at + 1 ||
        (size_t)addr_len > sizeof *addr || addr->sun_path[0] != '\0') {
        return 0;
    }
    name = addr->sun_path + 1;
    name_len = (size_t)addr_len - path_at - 1;
    if (name_len < prefix_len + 2 || name_len > prefix_len + 6 ||
        memcmp(name, s->prefix, prefix_len) != 0 || name[prefix_len] != '/' ||
        name[prefix_len + 1] == '0') {
        return 0;
    }
    for (i = prefix_len + 1; i < name_len; i++) {
        if (name[i] < '0' || name[i] > '9') {
            return 0;
        }
        port = port * 10 + (unsigned long)(name[i] - '0');
    }
    return port <= 65535 ? (uint16_t)port : 0;
}

/* Parse 1-5 decimal digits (exactly the range [text, end)) as a port 1..65535; 0 if invalid. */
static uint16_t parse_port(const char *text, const char *end)
{
    unsigned long port = 0;
    const char *p;

    if (end <= text || end - text > 5) {
        return 0;
    }
    for (p = text; p < end; p++) {
        if (*p < '0' || *p > '9') {
            return 0;
        }
        port = port * 10 + (unsigned long)(*p - '0');
    }
    return port <= 65535 ? (uint16_t)port : 0;
}

/* ----- options ------------------------------------------------------------------------------ */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* Read the `prefix` option from the key=value lines in `options` into `prefix` (capacity
 * UD_MAX_PREFIX + 1). Returns 0, or -1 with a reason in `err`. */
static int read_prefix_option(const char *options, char *prefix, char *err, size_t err_len)
{
    const char *line = options;

    strcpy(prefix, UD_DEFAULT_PREFIX);
    while (*line != '\0') {
        const char *line_end = strchr(line, '\n');
        const char *eq, *key, *key_end, *value, *value_end, *p;

        if (line_end == NULL) {
            line_end = line + strlen(line);
        }
        eq = memchr(line, '=', (size_t)(line_end - line));
        if (eq != NULL) {
            key = line;
            key_end = eq;
            value = eq + 1;
            value_end = line_end;
            while (key < key_end && is_space(*key)) key++;
            while (key_end > key && is_space(key_end[-1])) key_end--;
            while (value < value_end && is_space(*value)) value++;
            while (value_end > value && is_space(value_end[-1])) value_end--;
            if ((size_t)(key_end - key) == 6 && memcmp(key, "prefix", 6) == 0) {
                size_t len = (size_t)(value_end - value);

                if (len == 0) {
                    return 0; /* an unset console variable: keep the default */
                }
                if (len > UD_MAX_PREFIX) {
                    write_text(err, err_len, "option prefix is %zu bytes long, at most %d allowed",
                               len, UD_MAX_PREFIX);
                    return -1;
                }
                for (p = value; p < value_end; p++) {
                    if (*p <= ' ' || *p > '~') {
                        write_text(err, err_len,
                                   "option prefix may hold only printable ASCII other than space");
                        return -1;
                    }
                }
                memcpy(prefix, value, len);
                prefix[len] = '\0';
                return 0; /* the first line with the key wins */
            }
        }
        line = *line_end == '\n' ? line_end + 1 : line_end;
    }
    return 0;
}

/* ----- the vtable functions ----------------------------------------------------------------- */

/* Bind `fd` to PORT under the socket's prefix. Returns 0 or the errno of bind. */
static int bind_port(ud_socket *s, uint16_t port)
{
    struct sockaddr_un addr;
    socklen_t addr_len;

    if (make_address(s->prefix, port, &addr, &addr_len) != 0) {
        return ENAMETOOLONG;
    }
    if (bind(s->fd, (const struct sockaddr *)&addr, addr_len) != 0) {
        return errno;
    }
    return 0;
}

/* A seed that differs between processes and calls, for picking random ports. */
static uint32_t random_seed(void)
{
    struct timespec now;
    uint32_t seed;

    clock_gettime(CLOCK_MONOTONIC, &now);
    seed = (uint32_t)getpid() * 2654435761u;
    seed ^= (uint32_t)now.tv_nsec ^ ((uint32_t)now.tv_sec << 16);
    return seed != 0 ? seed : 0x9e3779b9u;
}

/* xorshift32: a small, good-enough generator for choosing ports. */
static uint32_t next_random(uint32_t *state)
{
    uint32_t x = *state;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

static int32_t ud_open(const struct NET_BackendOpenParams *params, void **out_socket, char *err,
                       size_t err_len)
{
    ud_socket *s;
    int rc = EADDRINUSE;

    write_text(err, err_len, "%s", "");
    if (params == NULL || out_socket == NULL) {
        write_text(err, err_len, "open: params or out_socket is NULL");
        return NET_BACKEND_ERR_INVALID;
    }
    *out_socket = NULL;
    if (params->size < offsetof(NET_BackendOpenParams, options) + sizeof params->options) {
        write_text(err, err_len, "open: parameter block of %u bytes is too small",
                   (unsigned)params->size);
        return NET_BACKEND_ERR_INVALID;
    }

    s = calloc(1, sizeof *s);
    if (s == NULL) {
        write_text(err, err_len, "open: out of memory");
        return NET_BACKEND_ERR_IO;
    }
    if (read_prefix_option(params->options != NULL ? params->options : "", s->prefix, err,
                           err_len) != 0) {
        free(s);
        return NET_BACKEND_ERR_INVALID;
    }
    s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        int e = errno;
        char buf[128];

        write_text(err, err_len, "cannot create an AF_UNIX datagram socket: %s",
                   strerror_r(e, buf, sizeof buf));
        free(s);
        return e == EAFNOSUPPORT ? NET_BACKEND_ERR_UNSUPPORTED : NET_BACKEND_ERR_IO;
    }

    if (params->port != 0) {
        s->port = params->port;
        rc = bind_port(s, s->port);
    } else {
        uint32_t state = random_seed();
        int attempt;

        for (attempt = 0; attempt < UD_BIND_ATTEMPTS && rc == EADDRINUSE; attempt++) {
            s->port = (uint16_t)(UD_RANDOM_PORT_FIRST +
                                 next_random(&state) %
                                     (UD_RANDOM_PORT_LAST - UD_RANDOM_PORT_FIRST + 1u));
            rc = bind_port(s, s->port);
        }
    }
    if (rc != 0) {
        char buf[128];

        if (rc == EADDRINUSE && params->port != 0) {
            write_text(err, err_len, "unix:%u is already bound under prefix '%s'",
                       (unsigned)s->port, s->prefix);
        } else if (rc == EADDRINUSE) {
            write_text(err, err_len, "no free port found under prefix '%s' after %d tries",
                       s->prefix, UD_BIND_ATTEMPTS);
        } else {
            write_text(err, err_len, "cannot bind unix:%u under prefix '%s': %s",
                       (unsigned)s->port, s->prefix, strerror_r(rc, buf, sizeof buf));
        }
        close(s->fd);
        free(s);
        return NET_BACKEND_ERR_IO;
    }
    *out_socket = s;
    return NET_BACKEND_OK;
}

static void ud_close(void *socket)
{
    ud_socket *s = socket;

    if (s == NULL) {
        return;
    }
    close(s->fd);
    free(s);
}

static int32_t ud_send(void *socket, const struct NET_Node *to, const uint8_t *data, size_t len)
{
    ud_socket *s = socket;
    struct sockaddr_un addr;
    socklen_t addr_len;
    uint16_t port;

    if (s == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    if (to == NULL || data == NULL || len == 0) {
        set_error(s, "send: NULL node, NULL data or an empty datagram");
        return NET_BACKEND_ERR_INVALID;
    }
    if (len > UD_MAX_PAYLOAD) {
        set_error(s, "send: datagram of %zu bytes is larger than %u", len, UD_MAX_PAYLOAD);
        return NET_BACKEND_ERR_TOO_LARGE;
    }
    port = node_port(to);
    if (port == 0 || make_address(s->prefix, port, &addr, &addr_len) != 0) {
        set_error(s, "send: the destination is not a unixdgram node");
        return NET_BACKEND_ERR_INVALID;
    }
    for (;;) {
        ssize_t n = sendto(s->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL,
                           (const struct sockaddr *)&addr, addr_len);
        if (n >= 0) {
            return NET_BACKEND_OK; /* datagram sockets send all of it or nothing */
        }
        switch (errno) {
        case EINTR:
            continue;
        case EAGAIN:
#if EWOULDBLOCK != EAGAIN
        case EWOULDBLOCK:
#endif
            return NET_BACKEND_WOULD_BLOCK; /* the peer's queue is full: the core retries */
        case ECONNREFUSED:
        case ENOENT:
            set_error(s, "send to unix:%u: no socket is bound there", (unsigned)port);
            return NET_BACKEND_ERR_UNREACHABLE;
        case EMSGSIZE:
            set_os_error(s, "send", errno);
            return NET_BACKEND_ERR_TOO_LARGE;
        default:
            set_os_error(s, "send", errno);
            return NET_BACKEND_ERR_IO;
        }
    }
}

static int32_t ud_receive(void *socket, struct NET_Node *from, uint8_t *buf, size_t cap)
{
    ud_socket *s = socket;
    int skipped;

    if (s == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    if (from == NULL || buf == NULL || cap == 0) {
        set_error(s, "receive: NULL node or buffer, or a buffer of 0 bytes");
        return NET_BACKEND_ERR_INVALID;
    }
    for (skipped = 0; skipped < UD_RECEIVE_SKIP_LIMIT;) {
        struct sockaddr_un addr;
        socklen_t addr_len = sizeof addr;
        uint16_t port;
        ssize_t n;

        memset(&addr, 0, sizeof addr);
        /* MSG_TRUNC makes recvfrom return the datagram's real length even when it is cut. */
        n = recvfrom(s->fd, buf, cap, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&addr,
                     &addr_len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            set_os_error(s, "receive", errno);
            return NET_BACKEND_ERR_IO;
        }
        skipped++;
        if ((size_t)n > cap) {
            s->dropped_oversize++;
            set_error(s, "receive: dropped a %zd-byte datagram larger than the %zu-byte buffer "
                         "(%lu so far)", n, cap, s->dropped_oversize);
            continue;
        }
        port = address_port(s, &addr, addr_len);
        if (n == 0 || port == 0) {
            /* 0 would read as "nothing waiting"; a sender outside our prefix has no node. */
            s->dropped_unusable++;
            set_error(s, "receive: dropped a datagram that was empty or had no unixdgram sender "
                         "(%lu so far)", s->dropped_unusable);
            continue;
        }
        node_encode(port, from);
        /* n <= cap and n fits: a datagram socket never queues more than INT32_MAX bytes. */
        return n > INT32_MAX ? NET_BACKEND_ERR_IO : (int32_t)n;
    }
    return 0;
}

static int32_t ud_wait(void *socket, uint32_t timeout_ms)
{
    ud_socket *s = socket;
    struct pollfd pfd;
    int rc;

    if (s == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    pfd.fd = s->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    rc = poll(&pfd, 1, timeout_ms > (uint32_t)INT_MAX ? INT_MAX : (int)timeout_ms);
    if (rc < 0) {
        if (errno == EINTR) {
            return 0; /* woken early; the caller's loop waits again if it wants */
        }
        set_os_error(s, "wait", errno);
        return NET_BACKEND_ERR_IO;
    }
    if (rc == 0) {
        return 0;
    }
    if (pfd.revents & (POLLERR | POLLNVAL)) {
        set_error(s, "wait: the socket reports an error");
        return NET_BACKEND_ERR_IO;
    }
    return (pfd.revents & POLLIN) ? 1 : 0;
}

static int32_t ud_node_compare(const struct NET_Node *a, const struct NET_Node *b)
{
    int order;

    if (a == b) {
        return 0;
    }
    if (a == NULL || b == NULL) {
        return a == NULL ? -1 : 1; /* NULL sorts first; the core never passes NULL */
    }
    order = memcmp(a->bytes, b->bytes, sizeof a->bytes);
    /* For canonical nodes the first differing byte is in the big-endian port, so this orders
     * by port; other bytes only break ties between invalid nodes, keeping the order total. */
    return (order > 0) - (order < 0);
}

static int32_t ud_node_print(const struct NET_Node *node, char *out, size_t out_len)
{
    uint16_t port;
    int n;

    if (node == NULL || out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    out[0] = '\0';
    port = node_port(node);
    if (port == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    n = snprintf(out, out_len, "unix:%u", (unsigned)port);
    if (n < 0 || (size_t)n >= out_len) {
        out[0] = '\0';
        return NET_BACKEND_ERR_INVALID; /* does not fit: write nothing rather than half a node */
    }
    return n;
}

/* Why the latest node_parse failed ("" after a success), for node_parse_error. The core calls
 * node_parse and node_parse_error back to back, serialized with every other call into this
 * backend, so one static buffer is enough for it; C99 has no thread-local storage (C11's
 * _Thread_local would be needed if other code parsed nodes with this backend from several
 * threads at once). */
static char ud_parse_error[UD_ERROR_LEN];

/* At most this many bytes of a refused text are quoted in the reason. */
#define UD_QUOTE_MAX 64

/* The length of [start, end) to quote: at most UD_QUOTE_MAX bytes, as the int printf wants. */
static int quote_len(const char *start, const char *end)
{
    return end - start > UD_QUOTE_MAX ? UD_QUOTE_MAX : (int)(end - start);
}

static int32_t ud_node_parse(const char *text, uint16_t default_port, struct NET_Node *out)
{
    const char *start, *end, *digits, *p;
    uint16_t port;

    ud_parse_error[0] = '\0';
    if (text == NULL || out == NULL) {
        write_text(ud_parse_error, sizeof ud_parse_error, "node_parse: text or out is NULL");
        return NET_BACKEND_ERR_INVALID;
    }
    start = text;
    end = text + strlen(text);
    while (start < end && is_space(*start)) start++;
    while (end > start && is_space(end[-1])) end--;

    digits = start;
    if (end - start >= 5 && memcmp(start, "unix:", 5) == 0) {
        digits = start + 5;
    }
    if (digits != start && digits == end) {
        port = default_port;
        if (port == 0) {
            write_text(ud_parse_error, sizeof ud_parse_error,
                       "\"unix:\" alone means the configured port, which is 0 (any)");
            return NET_BACKEND_ERR_INVALID; /* *out is left untouched */
        }
    } else {
        port = parse_port(digits, end);
    }
    if (port == 0) {
        for (p = digits; p < end && *p >= '0' && *p <= '9'; p++) {
        }
        if (p == end && end > digits) {
            write_text(ud_parse_error, sizeof ud_parse_error, "port %.*s is not 1-65535",
                       quote_len(digits, end), digits);
        } else {
            write_text(ud_parse_error, sizeof ud_parse_error,
                       "\"%.*s\" is neither unix:PORT nor PORT", quote_len(start, end), start);
        }
        return NET_BACKEND_ERR_INVALID; /* *out is left untouched */
    }
    node_encode(port, out);
    return NET_BACKEND_OK;
}

/* Why this thread's latest node_parse failed (appended to the vtable after version 1; a backend
 * may leave it NULL): the line node_parse recorded, 0 after a success. */
static int32_t ud_node_parse_error(char *out, size_t out_len)
{
    if (out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    return (int32_t)write_text(out, out_len, "%s", ud_parse_error);
}

static int32_t ud_broadcast_node(void *socket, uint16_t port, struct NET_Node *out)
{
    ud_socket *s = socket;

    (void)port;
    if (s == NULL || out == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    set_error(s, "unixdgram has no broadcast");
    return NET_BACKEND_ERR_UNSUPPORTED;
}

static int32_t ud_local_node(void *socket, const struct NET_Node *towards, struct NET_Node *out)
{
    ud_socket *s = socket;

    (void)towards; /* every peer sees this socket by the same name */
    if (s == NULL || out == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    node_encode(s->port, out);
    return NET_BACKEND_OK;
}

static int32_t ud_last_error(void *socket, char *out, size_t out_len)
{
    const ud_socket *s = socket;

    if (out == NULL || out_len == 0) {
        return 0;
    }
    return (int32_t)write_text(out, out_len, "%s", s != NULL ? s->last_error : "no socket");
}

static int32_t ud_bound_port(void *socket)
{
    const ud_socket *s = socket;

    if (s == NULL) {
        return NET_BACKEND_ERR_INVALID;
    }
    return (int32_t)s->port;
}

/* What the socket is bound to, for the console's `status` (appended to the vtable after
 * version 1; a backend may leave it NULL). */
static int32_t ud_describe_socket(void *socket, char *out, size_t out_len)
{
    const ud_socket *s = socket;

    if (s == NULL || out == NULL || out_len == 0) {
        return NET_BACKEND_ERR_INVALID;
    }
    return (int32_t)write_text(out, out_len, "abstract AF_UNIX address @%s/%u", s->prefix,
                               (unsigned)s->port);
}

/* ----- the entry point ---------------------------------------------------------------------- */

static const NET_BackendVTable UD_VTABLE = {
    .abi_version = NET_BACKEND_ABI_VERSION,
    .size = sizeof(NET_BackendVTable),
    .name = UD_NAME,
    .max_payload = UD_MAX_PAYLOAD,
    .capabilities = 0, /* neither NET_BACKEND_CAP_BROADCAST nor NET_BACKEND_CAP_CLIENT_SERVER */
    .open = ud_open,
    .close = ud_close,
    .send = ud_send,
    .receive = ud_receive,
    .wait = ud_wait,
    .node_compare = ud_node_compare,
    .node_print = ud_node_print,
    .node_parse = ud_node_parse,
    .broadcast_node = ud_broadcast_node,
    .local_node = ud_local_node,
    .last_error = ud_last_error,
    .bound_port = ud_bound_port,
    .node_parse_error = ud_node_parse_error,
    .describe_socket = ud_describe_socket,
};

/* The one exported symbol. A core that speaks an older ABI than this backend's version 1
 * cannot use it (there is none yet, but the check shows where it goes). */
NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version);

NET_BACKEND_EXPORT const NET_BackendVTable *parsec_net_backend_entry(uint32_t core_abi_version)
{
    if (core_abi_version < NET_BACKEND_ABI_VERSION) {
        return NULL;
    }
    return &UD_VTABLE;
}
