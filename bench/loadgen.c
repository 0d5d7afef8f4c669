/*
 * loadgen: a closed-loop RESP load generator as lean as redis-benchmark,
 * for the benchmark rows that replay real job IDs (which redis-benchmark
 * cannot name), and an open-loop one for latency.  bench/client.py builds
 * it on demand; see bench/README.md.
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
 *   loadgen open PORT CLIENTS RATE SECONDS KIND OUT [CONSUME_PORT CONSUMERS]
 *       Open loop (bench/latency.py): RATE requests a second for SECONDS,
 *       on a fixed schedule over CLIENTS connections, each request's
 *       latency taken from when it was due.  KIND "jobs[:R[:async]]" sends
 *       ADDJOB latency <due> 0 [REPLICATE R] [ASYNC]; "lists" LPUSH latency
 *       <due>.  With CONSUMERS, that many connections to CONSUME_PORT wait
 *       in GETJOB TIMEOUT 100 (ACKJOB of each job got) or BRPOP.  Writes
 *       the latencies (int64 ns) to OUT.sent (write replies), OUT.got (a
 *       consumer has the item) and OUT.acked (its ACKJOB replied), and
 *       prints elapsed, produced, sent, got, acked, errors, lost.
 *
 * replay and cycle print one line of key=value pairs on stdout:
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
#include <sys/timerfd.h>
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

/* ---- open mode: a fixed schedule, latency from the scheduled time ----
 * Request k is due at start + k / RATE and goes out on producer k % CLIENTS
 * when due, whatever the server does (requests queue behind a slow reply:
 * no coordinated omission).  A request's latency runs from its due time,
 * not from when it could be written. */

typedef struct {
    int64_t *data;
    long head, len, cap;
} Ring;

static void ring_push(Ring *r, int64_t v) {
    if (r->len == r->cap) {
        long cap = r->cap ? r->cap * 2 : 64;
        int64_t *d = xmalloc(sizeof(int64_t) * (size_t)cap);
        for (long i = 0; i < r->len; i++) d[i] = r->data[(r->head + i) % r->cap];
        free(r->data);
        r->data = d;
        r->head = 0;
        r->cap = cap;
    }
    r->data[(r->head + r->len) % r->cap] = v;
    r->len++;
}

static int64_t ring_pop(Ring *r) {
    if (r->len == 0) die("a reply nobody asked for");
    int64_t v = r->data[r->head];
    r->head = (r->head + 1) % r->cap;
    r->len--;
    return v;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Latencies in ns, appended to a file Python reads into a histogram. */
typedef struct {
    FILE *f;
    long long count;
} Record;

static void record(Record *r, int64_t ns) {
    if (fwrite(&ns, sizeof ns, 1, r->f) != 1) die("writing latencies: %s", strerror(errno));
    r->count++;
}

/* A producer sends the scenario's write; a consumer waits in a blocking
 * read (GETJOB or BRPOP) and, for jobs, acknowledges what it got. */
enum { PRODUCER, CONSUMER };
/* What a consumer's next reply answers */
enum { WAIT_READ = -1 };

typedef struct {
    int fd, role;
    OutBuf out;
    long sent;
    InBuf in;
    Ring due;  /* producer: due times; consumer: WAIT_READ or an ACK's due time */
    int watching_out;  /* EPOLLOUT is in its epoll registration */
} Peer;

typedef struct {
    int jobs;                   /* ADDJOB/GETJOB/ACKJOB, else LPUSH/BRPOP */
    const char *replicate;      /* ADDJOB's REPLICATE, or NULL */
    int async;                  /* ADDJOB ... ASYNC */
    int consumers;              /* 0: the producers' replies are all we time */
    Record sent, got, acked;
    long long errors, lost_reads;
} Open;

static void peer_flush(int epfd, Peer *p) {
    while (p->sent < p->out.len) {
        ssize_t n = write(p->fd, p->out.data + p->sent, (size_t)(p->out.len - p->sent));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n <= 0) die("write: %s", strerror(errno));
        p->sent += n;
    }
    if (p->sent == p->out.len) p->sent = p->out.len = 0;
    /* Re-registered only when that changes: the generator shares the
     * machine with the server it times, and a system call a write was
     * a third of its calls (bench/README.md, "Tails below saturation"). */
    int want_out = p->out.len != 0;
    if (want_out == p->watching_out) return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = p};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, p->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    p->watching_out = want_out;
}

static void produce(int epfd, Peer *p, const Open *o, int64_t due) {
    char body[24];
    snprintf(body, sizeof body, "%016llx", (unsigned long long)due);
    if (o->jobs) {
        const char *argv[7] = {"ADDJOB", "latency", body, "0"};
        int argc = 4;
        if (o->replicate) {
            argv[argc++] = "REPLICATE";
            argv[argc++] = o->replicate;
        }
        if (o->async) argv[argc++] = "ASYNC";
        out_multibulk(&p->out, argc, argv);
    } else {
        const char *argv[] = {"LPUSH", "latency", body};
        out_multibulk(&p->out, 3, argv);
    }
    ring_push(&p->due, due);
    peer_flush(epfd, p);
}

static void consume_next(Peer *p, const Open *o) {
    const char *getjob[] = {"GETJOB", "TIMEOUT", "100", "COUNT", "1", "FROM", "latency"};
    const char *brpop[] = {"BRPOP", "latency", "0.1"};
    if (o->jobs) out_multibulk(&p->out, 7, getjob);
    else out_multibulk(&p->out, 3, brpop);
    ring_push(&p->due, WAIT_READ);
}

/* The due time a job or list item carries in its body (16 hex digits). */
static int64_t due_in_body(const char *body, long long len) {
    if (len != 16) die("a body that is not a due time (%lld bytes)", len);
    char hex[17];
    memcpy(hex, body, 16);
    hex[16] = '\0';
    return (int64_t)strtoull(hex, NULL, 16);
}

/* The n-th element (a bulk string) of the array at reply; *len its length. */
static const char *nth_bulk(const char *reply, long len, int n, long long *blen) {
    long long count, ignored;
    char kind;
    int bad = 0;
    long pos = scan_line_number(reply, len, &count, &bad);
    if (reply[0] != '*' || bad || count <= n) die("a read reply is not an array of %d", n + 1);
    for (int i = 0; i < n; i++) pos += scan_reply(reply + pos, len - pos, &kind, &ignored);
    long head = scan_line_number(reply + pos, len - pos, blen, &bad);
    if (reply[pos] != '$' || bad || *blen < 0) die("a read reply's field is not a string");
    return reply + pos + head;
}

/* One reply for p: returns how many produced items it accounts for at a
 * consumer (1 for a job or item read, else 0). */
static int on_reply(int epfd, Peer *p, Open *o, const char *reply, long len, char kind,
                    long long value) {
    int64_t due = ring_pop(&p->due), now = now_ns();
    if (p->role == PRODUCER) {
        if (kind == '-') o->errors++;
        else record(&o->sent, now - due);
        return 0;
    }
    if (due != WAIT_READ) {  /* an ACKJOB's reply */
        if (kind != ':' || value != 1) o->errors++;
        else record(&o->acked, now - due);
        return 0;
    }
    if (kind == '-') die("a blocking read failed: %.*s", (int)(len - 2), reply);
    int items = 0;
    if (value > 0) {
        long long blen;
        if (o->jobs) {
            /* GETJOB COUNT 1: [[queue, id, body]] */
            long long one, ignored;
            int bad = 0;
            long at = scan_line_number(reply, len, &one, &bad);
            const char *job = reply + at;
            long jlen = len - at;
            const char *body = nth_bulk(job, jlen, 2, &blen);
            int64_t item_due = due_in_body(body, blen);
            record(&o->got, now - item_due);
            long long idlen;
            const char *id = nth_bulk(job, jlen, 1, &idlen);
            char head[32];
            int h = snprintf(head, sizeof head, "*2\r\n$6\r\nACKJOB\r\n$%lld\r\n", idlen);
            out_append(&p->out, head, h);
            out_append(&p->out, id, (long)idlen);
            out_append(&p->out, "\r\n", 2);
            ring_push(&p->due, item_due);
            (void)ignored;
        } else {
            /* BRPOP: [list, item] */
            const char *body = nth_bulk(reply, len, 1, &blen);
            record(&o->got, now - due_in_body(body, blen));
        }
        items = 1;
    }
    consume_next(p, o);
    peer_flush(epfd, p);
    return items;
}

/* Reads what arrived at p and handles each complete reply; returns the
 * items consumed. */
static long peer_receive(int epfd, Peer *p, Open *o) {
    inbuf_make_room(&p->in);
    ssize_t n = read(p->fd, p->in.data + p->in.end, (size_t)(p->in.size - p->in.end));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (n == 0) die("the server closed a connection");
    if (n < 0) die("read: %s", strerror(errno));
    p->in.end += n;
    long items = 0;
    for (;;) {
        char kind;
        long long value;
        const char *at = p->in.data + p->in.start;
        long used = scan_reply(at, p->in.end - p->in.start, &kind, &value);
        if (used < 0) die("protocol error in a reply");
        if (used == 0) return items;
        p->in.start += used;
        items += on_reply(epfd, p, o, at, used, kind, value);
    }
}

static Record open_record(const char *prefix, const char *what) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", prefix, what);
    Record r = {fopen(path, "wb"), 0};
    if (!r.f) die("%s: %s", path, strerror(errno));
    return r;
}

static int open_loop(int port, int clients, double rate, double seconds, const char *kind,
                     const char *out, int consume_port, int consumers) {
    Open o = {0};
    if (strcmp(kind, "lists") == 0) o.jobs = 0;
    else if (strncmp(kind, "jobs", 4) == 0) {
        o.jobs = 1;
        /* jobs, jobs:R or jobs:R:async */
        const char *colon = strchr(kind, ':');
        if (colon) {
            static char replicate[16];
            snprintf(replicate, sizeof replicate, "%.*s", (int)strcspn(colon + 1, ":"),
                     colon + 1);
            o.replicate = replicate;
            o.async = strstr(colon + 1, ":async") != NULL;
        }
    } else die("KIND must be jobs[:R[:async]] or lists");
    o.consumers = consumers;
    o.sent = open_record(out, "sent");
    o.got = open_record(out, "got");
    o.acked = open_record(out, "acked");

    int epfd = epoll_create1(0);
    if (epfd < 0) die("epoll_create1: %s", strerror(errno));
    int total = clients + consumers;
    Peer *peers = xmalloc(sizeof(Peer) * (size_t)total);
    memset(peers, 0, sizeof(Peer) * (size_t)total);
    for (int i = 0; i < total; i++) {
        Peer *p = &peers[i];
        p->role = i < clients ? PRODUCER : CONSUMER;
        p->fd = connect_to(p->role == PRODUCER ? port : consume_port);
        fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, p->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    }
    for (int i = clients; i < total; i++) {
        consume_next(&peers[i], &o);
        peer_flush(epfd, &peers[i]);
    }
    /* The pacer: a timerfd armed for the next due time (epoll's own
     * timeout has millisecond steps, too coarse at these rates). */
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    if (tfd < 0) die("timerfd_create: %s", strerror(errno));
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev) < 0) die("epoll_ctl: %s", strerror(errno));

    long long planned = (long long)(rate * seconds), produced = 0, consumed = 0;
    int64_t start = now_ns() + 10000000;  /* 10 ms to settle */
    double interval = 1e9 / rate;
    int64_t drain_deadline = 0;
    int64_t armed = -1;  /* the due time the timer is set for (-1: none) */
    struct epoll_event events[256];
    for (;;) {
        int64_t now = now_ns();
        while (produced < planned && start + (int64_t)(produced * interval) <= now) {
            produce(epfd, &peers[produced % clients], &o,
                    start + (int64_t)(produced * interval));
            produced++;
        }
        long owed = 0;
        for (int i = 0; i < clients; i++) owed += peers[i].due.len;
        int reading_done = consumers == 0 || consumed >= produced - o.errors;
        if (produced == planned && owed == 0) {
            int acks_owed = 0;
            for (int i = clients; i < total; i++)
                acks_owed += (int)peers[i].due.len - 1;  /* beyond the pending read */
            if (reading_done && acks_owed <= 0) break;
            if (!drain_deadline) drain_deadline = now + 10000000000LL;
            if (now > drain_deadline) {
                o.lost_reads = produced - o.errors - consumed;
                break;
            }
        }
        int64_t next = start + (int64_t)(produced * interval);
        if (produced < planned && next != armed) {  /* (a reply's wake-up: still set) */
            struct itimerspec when = {0};
            armed = next;
            when.it_value.tv_sec = next / 1000000000;
            when.it_value.tv_nsec = next % 1000000000;
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &when, NULL);
        }
        int n = epoll_wait(epfd, events, 256, produced < planned ? -1 : 100);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait: %s", strerror(errno));
        for (int e = 0; e < n; e++) {
            Peer *p = events[e].data.ptr;
            if (p == NULL) {
                uint64_t ticks;
                if (read(tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                    die("timerfd: %s", strerror(errno));
                armed = -1;  /* fired: one-shot */
                continue;
            }
            if (events[e].events & EPOLLOUT) peer_flush(epfd, p);
            if (events[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                consumed += peer_receive(epfd, p, &o);
        }
    }
    double elapsed = (double)(now_ns() - start) / 1e9;
    fclose(o.sent.f);
    fclose(o.got.f);
    fclose(o.acked.f);
    printf("elapsed=%.6f produced=%lld sent=%lld got=%lld acked=%lld errors=%lld lost=%lld\n",
           elapsed, produced, o.sent.count, o.got.count, o.acked.count, o.errors,
           o.lost_reads);
    for (int i = 0; i < total; i++) close(peers[i].fd);
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
    if ((argc == 8 || argc == 10) && strcmp(argv[1], "open") == 0) {
        char *end;
        double rate = strtod(argv[4], &end), seconds = strtod(argv[5], &end);
        if (rate <= 0 || seconds <= 0) {
            fprintf(stderr, "loadgen: RATE and SECONDS must be positive\n");
            return 1;
        }
        int consume_port = argc == 10 ? (int)positive(argv[8], "CONSUME_PORT") : 0;
        int consumers = argc == 10 ? (int)positive(argv[9], "CONSUMERS") : 0;
        return open_loop((int)positive(argv[2], "PORT"), (int)positive(argv[3], "CLIENTS"),
                         rate, seconds, argv[6], argv[7], consume_port, consumers);
    }
    fprintf(stderr,
            "usage: loadgen replay PORT CLIENTS PIPELINE FILE [like-redis-benchmark]\n"
            "       loadgen cycle PORT JOBS BATCH jobs|lists\n"
            "       loadgen open PORT CLIENTS RATE SECONDS KIND OUT [CONSUME_PORT CONSUMERS]\n");
    return 1;
}
