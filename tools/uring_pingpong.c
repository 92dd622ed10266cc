/* Raw UDP ping-pong on 127.0.0.1 where each side receives through io_uring: a multishot
 * recvmsg with a ring of provided buffers, so "is another datagram waiting?" is a read of the
 * completion queue in shared memory, not a system call. It answers whether io_uring could
 * spare a game frame the read that finds the socket empty (see docs/benchmarks.md; it cannot
 * here: the completions arrive later than a spinning recvfrom sees the datagram).
 *
 *   apt-get install liburing-dev
 *   cc -O2 -o /tmp/uring_pingpong tools/uring_pingpong.c -luring   (harness: tools/pingpong.h)
 *   /tmp/uring_pingpong MODE   MODE 0: recvfrom, then the read that finds the socket empty
 *                              1: io_uring, default set-up (task work signalled)
 *                              2: io_uring, IORING_SETUP_COOP_TASKRUN, io_uring_get_events
 *                                 while the completion queue is empty
 *                              3: io_uring, SINGLE_ISSUER | DEFER_TASKRUN, io_uring_get_events
 *                                 while the completion queue is empty
 *
 * Prints p50 and p99 of 20,000 round trips of 64-byte datagrams after 1,000 warm-up ones. */
#include "pingpong.h"
#include <liburing.h>

#define BUFFERS 64
#define BUFFER_SIZE 2048
#define GROUP 1

static int mode;
static struct io_uring ring;
static struct io_uring_buf_ring *provided;
static char *buffer_memory;
static struct msghdr shape; /* tells the kernel how much room the name takes in a buffer */
static int uring_fd;

static void fail(const char *what, int err) {
    fprintf(stderr, "%s: %s\n", what, strerror(err < 0 ? -err : err));
    exit(1);
}

static void give_buffer(int id) {
    io_uring_buf_ring_add(provided, buffer_memory + (size_t)id * BUFFER_SIZE, BUFFER_SIZE, id,
                          io_uring_buf_ring_mask(BUFFERS), 0);
    io_uring_buf_ring_advance(provided, 1);
}

static void arm_receive(void) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_recvmsg_multishot(sqe, uring_fd, &shape, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = GROUP;
    int r = io_uring_submit(&ring);
    if (r < 0) fail("io_uring_submit", r);
}

static void start_uring(int fd) {
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    if (mode == 2) params.flags = IORING_SETUP_COOP_TASKRUN;
    if (mode == 3) params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int r = io_uring_queue_init_params(64, &ring, &params);
    if (r) fail("io_uring_queue_init_params", r);
    if (posix_memalign((void **)&provided, 4096, BUFFERS * sizeof(struct io_uring_buf)))
        fail("posix_memalign", 12);
    buffer_memory = malloc((size_t)BUFFERS * BUFFER_SIZE);
    if (!buffer_memory) fail("malloc", 12);
    struct io_uring_buf_reg reg = {
        .ring_addr = (unsigned long)provided, .ring_entries = BUFFERS, .bgid = GROUP};
    r = io_uring_register_buf_ring(&ring, &reg, 0);
    if (r) fail("io_uring_register_buf_ring", r);
    io_uring_buf_ring_init(provided);
    for (int id = 0; id < BUFFERS; id++) give_buffer(id);
    memset(&shape, 0, sizeof shape);
    shape.msg_namelen = sizeof(struct sockaddr_storage);
    uring_fd = fd;
    arm_receive();
}

/* One completion if there is one: 1 if it carried a datagram. No system call unless the
 * multishot receive ended and has to be armed again. */
static int take_completion(void) {
    struct io_uring_cqe *cqe;
    if (io_uring_peek_cqe(&ring, &cqe) != 0) return 0;
    int res = cqe->res;
    unsigned flags = cqe->flags;
    int datagram = 0;
    if (res >= 0 && (flags & IORING_CQE_F_BUFFER)) {
        int id = (int)(flags >> IORING_CQE_BUFFER_SHIFT);
        datagram = io_uring_recvmsg_validate(buffer_memory + (size_t)id * BUFFER_SIZE, res,
                                             &shape) != NULL;
        give_buffer(id);
    }
    io_uring_cqe_seen(&ring, cqe);
    if (!(flags & IORING_CQE_F_MORE)) arm_receive();
    return datagram;
}

/* Spin until one datagram has been read, then make sure none is left waiting: for recvfrom
 * that takes a read that comes back empty, for io_uring a look at the completion queue. */
static void receive_one(int fd) {
    char buffer[BUFFER_SIZE];
    for (;;) {
        if (mode == 0) {
            if (recv(fd, buffer, sizeof buffer, MSG_DONTWAIT) > 0) {
                while (recv(fd, buffer, sizeof buffer, MSG_DONTWAIT) > 0) {
                }
                return;
            }
        } else {
            if (take_completion()) {
                while (take_completion()) {
                }
                return;
            }
            if (mode >= 2) io_uring_get_events(&ring);
        }
    }
}

int main(int argc, char **argv) {
    mode = argc > 1 ? atoi(argv[1]) : -1;
    if (mode < 0 || mode > 3) {
        fprintf(stderr, "usage: %s MODE  (0 recvfrom, 1-3 io_uring set-ups; see the top of the file)\n",
                argv[0]);
        return 2;
    }
    static const char *labels[] = {"recvfrom + draining read", "io_uring, default",
                                   "io_uring, COOP_TASKRUN + get_events",
                                   "io_uring, DEFER_TASKRUN + get_events"};
    char label[96];
    snprintf(label, sizeof label, "mode %d (%s)", mode, labels[mode]);
    pingpong_run(label, 64, mode > 0 ? start_uring : NULL, receive_one);
    return 0;
}
