/*
 * loadgen: a closed-loop RESP load generator as lean as redis-benchmark,
 * for the benchmark rows that replay real job IDs (which redis-benchmark
 * cannot name).  bench/client.py builds it on demand; see bench/README.md.
 *
 *   loadgen replay PORT CLIENTS PIPELINE FILE [like-redis-benchmark]
 *       FILE holds pre-encoded RESP requests, concatenated (each one
 *       multibulk).  Client i sends requests i, i+CLIENTS, i+2*CLIENTS, ...
 *       (the split of bench.client.load), PIPELINE at a time: it writes a
 *       batch, waits for all of its replies, then writes the next batch,
 *       as redis-benchmark -P does.  It writes a batch at once from the
 *       loop that read the last reply; "like-redis-benchmark" waits for
 *       epoll to report the socket writable first, as redis-benchmark's
 *       event loop does (more syscalls a request: a slower loader).
 *
 *   loadgen cycle PORT JOBS BATCH jobs|lists
 *       One client, BATCH at a time: "jobs" sends ADDJOB cycle <12 bytes> 0
 *       x BATCH, GETJOB NOHANG COUNT BATCH FROM cycle, then ACKJOB of the
 *       IDs that came back (the reply must be :BATCH); "lists" sends
 *       LPUSH cycle <12 bytes> x BATCH then RPOP cycle BATCH.
 *
 * Either prints one line of key=value pairs on stdout:
 *   elapsed=<s> requests=<n> replies=<n> errors=<n> integers=<n> int_sum=<n> nils=<n>
 * elapsed runs (CLOCK_MONOTONIC) from the first send to the last reply;
 * integers, int_sum, nils and errors count top-level replies only.
 * Exit status 0 on success, 1 on bad arguments, 2 on I/O or protocol errors.
 *
 * Only libc: epoll, non-blocking sockets, TCP_NODELAY.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { READ_CHUNK = 256 * 1024, MAX_DEPTH = 16 };

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("loadgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- counters of top-level replies ---- */

typedef struct {
    long long replies, errors, integers, int_sum, nils;
} Tally;

static void print_result(double elapsed, long long requests, const Tally *t) {
    printf("elapsed=%.6f requests=%lld replies=%lld errors=%lld integers=%lld "
           "int_sum=%lld nils=%lld\n",
           elapsed, requests, t->replies, t->errors, t->integers, t->int_sum, t->nils);
}

/* ---- RESP reply scanner ----
 * scan_reply looks at buf[0..len) for one complete reply.  Returns its
 * length in bytes, 0 when more bytes are needed, -1 on a protocol error.
 * *kind gets the first byte, *value the integer of ':' replies and the
 * count or length of '*' and '$' ones (-1 for a nil). */

/* The number after the type byte up to CRLF; 0 if the line is incomplete. */
static long scan_line_number(const char *buf, long len, long long *value, int *bad) {
    long i = 1;
    int negative = 0;
    long long n = 0;
    if (i < len && buf[i] == '-') {
        negative = 1;
        i++;
    }
    long digits_at = i;
    while (i < len && buf[i] >= '0' && buf[i] <= '9') {
        n = n * 10 + (buf[i] - '0');
        i++;
    }
    if (i + 1 >= len) return 0;  /* CRLF not here yet */
    if (i == digits_at || buf[i] != '\r' || buf[i + 1] != '\n') {
        *bad = 1;
        return 0;
    }
    *value = negative ? -n : n;
    return i + 2;
}

static long scan_reply_at(const char *buf, long len, int depth, char *kind,
                          long long *value) {
    if (len < 1) return 0;
    if (depth > MAX_DEPTH) return -1;
    *kind = buf[0];
    *value = 0;
    int bad = 0;
    switch (buf[0]) {
    case '+':
    case '-': {
        const char *crlf = memmem(buf, (size_t)len, "\r\n", 2);
        return crlf ? (long)(crlf - buf) + 2 : 0;
    }
    case ':': {
        long head = scan_line_number(buf, len, value, &bad);
        return bad ? -1 : head;
    }
    case '$': {
        long head = scan_line_number(buf, len, value, &bad);
        if (bad) return -1;
        if (head == 0) return 0;
        if (*value < 0) return head;  /* $-1: nil */
        long total = head + (long)*value + 2;
        if (len < total) return 0;
        if (buf[total - 2] != '\r' || buf[total - 1] != '\n') return -1;
        return total;
    }
    case '*': {
        long long count;
        long pos = scan_line_number(buf, len, &count, &bad);
        if (bad) return -1;
        if (pos == 0) return 0;
        *value = count;
        for (long long i = 0; i < count; i++) {
            char inner_kind;
            long long inner_value;
            long used = scan_reply_at(buf + pos, len - pos, depth + 1, &inner_kind,
                                      &inner_value);
            if (used <= 0) return used;
            pos += used;
        }
        return pos;
    }
    default:
        return -1;
    }
}

static long scan_reply(const char *buf, long len, char *kind, long long *value) {
    return scan_reply_at(buf, len, 0, kind, value);
}

static void tally_reply(Tally *t, char kind, long long value) {
    t->replies++;
    if (kind == '-') t->errors++;
    if (kind == ':') {
        t->integers++;
        t->int_sum += value;
    }
    if ((kind == '$' || kind == '*') && value < 0) t->nils++;
}

/* ---- connections ---- */

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket: %s", strerror(errno));
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("connect 127.0.0.1:%d: %s", port, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* A reply buffer: bytes read but not yet scanned sit in data[start..end). */
typedef struct {
    char *data;
    long start, end, size;
} InBuf;

/* Room for one more read at the end, moving or growing as needed. */
static void inbuf_make_room(InBuf *in) {
    if (in->start == in->end) in->start = in->end = 0;
    if (in->size - in->end >= READ_CHUNK) return;
    if (in->start > 0) {
        memmove(in->data, in->data + in->start, (size_t)(in->end - in->start));
        in->end -= in->start;
        in->start = 0;
    }
    if (in->size - in->end < READ_CHUNK) {
        in->size = in->end + READ_CHUNK;
        in->data = xrealloc(in->data, (size_t)in->size);
    }
}

/* ---- replay mode ---- */

/* Offsets of the requests in data (one past the last at [count]). */
static long *split_requests(const char *data, long len, long *count_out) {
    long cap = 1024, count = 0, pos = 0;
    long *starts = xmalloc(sizeof(long) * (size_t)(cap + 1));
    while (pos < len) {
        char kind;
        long long args;
        if (data[pos] != '*') die("request %ld is not a multibulk", count);
        long used = scan_reply(data + pos, len - pos, &kind, &args);
        if (used <= 0) die("request %ld is incomplete or malformed", count);
        if (count == cap) {
            cap *= 2;
            starts = xrealloc(starts, sizeof(long) * (size_t)(cap + 1));
        }
        starts[count++] = pos;
        pos += used;
    }
    starts[count] = pos;
    *count_out = count;
    return starts;
}

typedef struct {
    int fd;
    char *out;          /* this client's requests, concatenated */
    long *batch_end;    /* byte offset in out where each batch ends */
    int *batch_count;   /* requests in each batch */
    long batches, next_batch;
    long sent, send_end;  /* bytes of out written, end of the batch in flight */
    long awaited;         /* replies still due for the batch in flight */
    InBuf in;
} Client;

static void watch(int epfd, Client *c, int op, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(epfd, op, c->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
}

/* Write what is left of the batch in flight; watch for writability if the
 * socket buffer is full. */
static void flush(int epfd, Client *c) {
    while (c->sent < c->send_end) {
        ssize_t n = write(c->fd, c->out + c->sent, (size_t)(c->send_end - c->sent));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            watch(epfd, c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
            return;
        }
        if (n <= 0) die("write: %s", strerror(errno));
        c->sent += n;
    }
}

/* redis-benchmark's loop shape (the "like-redis-benchmark" argument):
 * a batch is written when epoll next reports the socket writable, the
 * read interest removed and a write interest added, and back (four
 * epoll_ctl and one more wakeup a batch, as its ae loop does; it makes
 * five), instead of being written at once. */
static int write_on_event = 0;

static void swap_interest(int epfd, Client *c, uint32_t events) {
    if (epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL) < 0) die("epoll_ctl: %s", strerror(errno));
    watch(epfd, c, EPOLL_CTL_ADD, events);
}

static void send_next_batch(int epfd, Client *c) {
    c->send_end = c->batch_end[c->next_batch];
    c->awaited = c->batch_count[c->next_batch];
    c->next_batch++;
    if (write_on_event) swap_interest(epfd, c, EPOLLOUT);
    else flush(epfd, c);
}

/* Read what arrived (one read a wakeup, as redis-benchmark does: epoll is
 * level-triggered, so anything left wakes us again) and count the complete
 * replies; returns 1 when the client has had every reply it is owed. */
static int receive(int epfd, Client *c, Tally *t, long long *left) {
    inbuf_make_room(&c->in);
    ssize_t n = read(c->fd, c->in.data + c->in.end, (size_t)(c->in.size - c->in.end));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (n == 0) die("the server closed a connection");
    if (n < 0) die("read: %s", strerror(errno));
    c->in.end += n;
    for (;;) {
        char kind;
        long long value;
        long used = scan_reply(c->in.data + c->in.start, c->in.end - c->in.start,
                               &kind, &value);
        if (used < 0) die("protocol error in a reply");
        if (used == 0) return 0;
        c->in.start += used;
        tally_reply(t, kind, value);
        (*left)--;
        if (--c->awaited > 0) continue;
        if (c->in.start != c->in.end) die("a reply nobody asked for");
        if (c->next_batch == c->batches) return 1;
        send_next_batch(epfd, c);
    }
}

static int replay(int port, int clients, int pipeline, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) die("%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = xmalloc((size_t)len);
    if (len && fread(data, 1, (size_t)len, f) != (size_t)len) die("%s: short read", path);
    fclose(f);
    long total;
    long *starts = split_requests(data, len, &total);

    /* Lay out each client's requests and batches before the clock starts. */
    Client *all = xmalloc(sizeof(Client) * (size_t)clients);
    int used_clients = 0;
    for (int i = 0; i < clients && i < total; i++) {
        Client *c = &all[used_clients++];
        memset(c, 0, sizeof *c);
        long mine = (total - i + clients - 1) / clients, bytes = 0;
        for (long r = i; r < total; r += clients) bytes += starts[r + 1] - starts[r];
        c->out = xmalloc((size_t)bytes);
        c->batches = (mine + pipeline - 1) / pipeline;
        c->batch_end = xmalloc(sizeof(long) * (size_t)c->batches);
        c->batch_count = xmalloc(sizeof(int) * (size_t)c->batches);
        long at = 0, k = 0;
        for (long r = i; r < total; r += clients, k++) {
            long size = starts[r + 1] - starts[r];
            memcpy(c->out + at, data + starts[r], (size_t)size);
            at += size;
            c->batch_end[k / pipeline] = at;
            c->batch_count[k / pipeline] = (int)(k % pipeline) + 1;
        }
        c->fd = connect_to(port);
    }
    free(data);
    free(starts);

    int epfd = epoll_create1(0);
    if (epfd < 0) die("epoll_create1: %s", strerror(errno));
    for (int i = 0; i < used_clients; i++) {
        int fl = fcntl(all[i].fd, F_GETFL);
        fcntl(all[i].fd, F_SETFL, fl | O_NONBLOCK);
        watch(epfd, &all[i], EPOLL_CTL_ADD, EPOLLIN);
    }

    Tally t = {0};
    long long left = total;
    int running = used_clients;
    double start = now_s();
    for (int i = 0; i < used_clients; i++) send_next_batch(epfd, &all[i]);
    struct epoll_event events[256];
    while (running) {
        int n = epoll_wait(epfd, events, 256, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait: %s", strerror(errno));
        for (int e = 0; e < n; e++) {
            Client *c = events[e].data.ptr;
            if (events[e].events & EPOLLOUT) {
                if (write_on_event) swap_interest(epfd, c, EPOLLIN);
                else watch(epfd, c, EPOLL_CTL_MOD, EPOLLIN);
                flush(epfd, c);
            }
            if (events[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                if (receive(epfd, c, &t, &left)) {
                    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
                    running--;
                }
            }
        }
    }
    double elapsed = now_s() - start;
    if (left != 0) die("%lld replies missing", left);
    print_result(elapsed, total, &t);
    for (int i = 0; i < used_clients; i++) close(all[i].fd);
    return 0;
}

/* ---- cycle mode (one blocking connection) ---- */

typedef struct {
    char *data;
    long len, cap;
} OutBuf;

static void out_append(OutBuf *o, const void *p, long n) {
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2;
        o->data = xrealloc(o->data, (size_t)o->cap);
    }
    memcpy(o->data + o->len, p, (size_t)n);
    o->len += n;
}

static void out_bulk(OutBuf *o, const char *p, long n) {
    char head[32];
    int h = snprintf(head, sizeof head, "$%ld\r\n", n);
    out_append(o, head, h);
    out_append(o, p, n);
    out_append(o, "\r\n", 2);
}

static void out_multibulk(OutBuf *o, int argc, const char **argv) {
    char head[32];
    int h = snprintf(head, sizeof head, "*%d\r\n", argc);
    out_append(o, head, h);
    for (int i = 0; i < argc; i++) out_bulk(o, argv[i], (long)strlen(argv[i]));
}

static void send_all(int fd, const char *p, long n) {
    while (n > 0) {
        ssize_t w = write(fd, p, (size_t)n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write: %s", strerror(errno));
        p += w;
        n -= w;
    }
}

/* Read until one complete reply sits at in->start; returns its length. */
static long read_reply(int fd, InBuf *in, char *kind, long long *value) {
    for (;;) {
        long used = scan_reply(in->data + in->start, in->end - in->start, kind, value);
        if (used < 0) die("protocol error in a reply");
        if (used > 0) return used;
        inbuf_make_room(in);
        ssize_t n = read(fd, in->data + in->end, (size_t)(in->size - in->end));
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) die("the server closed the connection");
        if (n < 0) die("read: %s", strerror(errno));
        in->end += n;
    }
}

/* Reads `count` replies and tallies them; dies on an error reply. */
static void expect_replies(int fd, InBuf *in, long count, Tally *t) {
    for (long i = 0; i < count; i++) {
        char kind;
        long long value;
        long used = read_reply(fd, in, &kind, &value);
        if (kind == '-')
            die("error reply: %.*s", (int)(used - 2), in->data + in->start);
        tally_reply(t, kind, value);
        in->start += used;
    }
}

/* GETJOB's reply is an array of [queue, id, body, ...] arrays: append
 * ACKJOB with every id to o; returns how many jobs came back. */
static long ack_request_from_getjob(const char *reply, long len, OutBuf *o) {
    char kind;
    long long jobs;
    long pos = scan_line_number(reply, len, &jobs, &(int){0});
    if (reply[0] != '*' || jobs < 0) die("GETJOB did not answer an array");
    char head[32];
    int h = snprintf(head, sizeof head, "*%lld\r\n", jobs + 1);
    out_append(o, head, h);
    out_bulk(o, "ACKJOB", 6);
    for (long long j = 0; j < jobs; j++) {
        long long fields, id_len;
        long at = pos + scan_line_number(reply + pos, len - pos, &fields, &(int){0});
        if (reply[pos] != '*' || fields < 2) die("a GETJOB entry is not [queue, id, ...]");
        long long ignored;
        at += scan_reply(reply + at, len - at, &kind, &ignored);  /* the queue */
        long id_head = scan_line_number(reply + at, len - at, &id_len, &(int){0});
        if (reply[at] != '$' || id_len < 0) die("a job id is not a bulk string");
        out_bulk(o, reply + at + id_head, (long)id_len);
        pos += scan_reply(reply + pos, len - pos, &kind, &ignored);
    }
    return (long)jobs;
}

static int cycle(int port, long jobs, int batch, const char *kind) {
    int is_jobs = strcmp(kind, "jobs") == 0;
    if (!is_jobs && strcmp(kind, "lists") != 0) die("cycle kind must be jobs or lists");
    char count[24];
    snprintf(count, sizeof count, "%d", batch);
    OutBuf push = {0}, pull = {0}, ack = {0};
    for (int i = 0; i < batch; i++) {
        const char *add[] = {"ADDJOB", "cycle", "xxxxxxxxxxxx", "0"};
        const char *lpush[] = {"LPUSH", "cycle", "xxxxxxxxxxxx"};
        if (is_jobs) out_multibulk(&push, 4, add);
        else out_multibulk(&push, 3, lpush);
    }
    const char *getjob[] = {"GETJOB", "NOHANG", "COUNT", count, "FROM", "cycle"};
    const char *rpop[] = {"RPOP", "cycle", count};
    if (is_jobs) out_multibulk(&pull, 6, getjob);
    else out_multibulk(&pull, 3, rpop);

    int fd = connect_to(port);
    InBuf in = {0};
    Tally t = {0};
    long rounds = jobs / batch > 0 ? jobs / batch : 1;
    long long requests = 0;
    double start = now_s();
    for (long r = 0; r < rounds; r++) {
        send_all(fd, push.data, push.len);
        expect_replies(fd, &in, batch, &t);
        send_all(fd, pull.data, pull.len);
        char k;
        long long n;
        long used = read_reply(fd, &in, &k, &n);
        if (k != '*' || n != batch) die("got %lld items back, expected %d", n, batch);
        requests += batch + 1;
        t.replies++;
        if (is_jobs) {
            ack.len = 0;
            ack_request_from_getjob(in.data + in.start, used, &ack);
            in.start += used;
            send_all(fd, ack.data, ack.len);
            Tally acked = {0};
            expect_replies(fd, &in, 1, &acked);
            if (acked.int_sum != batch) die("ACKJOB acked %lld of %d", acked.int_sum, batch);
            t.replies++;
            t.integers++;
            t.int_sum += acked.int_sum;
            requests++;
        } else {
            in.start += used;
        }
    }
    double elapsed = now_s() - start;
    print_result(elapsed, requests, &t);
    close(fd);
    return 0;
}

/* ---- arguments ---- */

static long positive(const char *s, const char *what) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v <= 0) {
        fprintf(stderr, "loadgen: %s must be a positive integer, not '%s'\n", what, s);
        exit(1);
    }
    return v;
}

int main(int argc, char **argv) {
    if ((argc == 6 || argc == 7) && strcmp(argv[1], "replay") == 0) {
        if (argc == 7) {
            if (strcmp(argv[6], "like-redis-benchmark") != 0) {
                fprintf(stderr, "loadgen: unknown option '%s'\n", argv[6]);
                return 1;
            }
            write_on_event = 1;
        }
        return replay((int)positive(argv[2], "PORT"), (int)positive(argv[3], "CLIENTS"),
                      (int)positive(argv[4], "PIPELINE"), argv[5]);
    }
    if (argc == 6 && strcmp(argv[1], "cycle") == 0)
        return cycle((int)positive(argv[2], "PORT"), positive(argv[3], "JOBS"),
                     (int)positive(argv[4], "BATCH"), argv[5]);
    fprintf(stderr,
            "usage: loadgen replay PORT CLIENTS PIPELINE FILE [like-redis-benchmark]\n"
            "       loadgen cycle PORT JOBS BATCH jobs|lists\n");
    return 1;
}
