/* WebSocket room broadcast load client: MEMBERS connections join PATH (a `websocket: room` route),
 * one more connection sends masked text messages of SIZE bytes into the same room, keeping WINDOW
 * messages "in flight" (sent but not yet delivered to every member); counts messages delivered to
 * the members for SECONDS after a 1 s warm-up. One thread, epoll. Loopback only (127.0.0.1).
 * usage: ws_room_bench PORT [PATH=/rooms/bench] [MEMBERS=1000] [WINDOW=8] [SIZE=64] [SECONDS=5]
 * Prints: "delivered/s N  sent/s M  (members K window W size S)".
 * Build: gcc -O2 -o ws_room_bench ws_room_bench.c (needs `ulimit -n` above MEMBERS + 16). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd, upgraded, sender;
    size_t have;
    char buf[65536];
} conn;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static size_t frame(char* out, size_t size) { /* masked text frame, FIN */
    size_t n = 0;
    out[n++] = (char)0x81;
    if (size < 126)
        out[n++] = (char)(0x80 | size);
    else {
        out[n++] = (char)(0x80 | 126);
        out[n++] = (char)(size >> 8);
        out[n++] = (char)size;
    }
    memcpy(out + n, "\x11\x22\x33\x44", 4);
    n += 4;
    for (size_t i = 0; i < size; i++)
        out[n + i] = (char)('a' ^ "\x11\x22\x33\x44"[i & 3]);
    return n + size;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ws_room_bench PORT [PATH] [MEMBERS] [WINDOW] [SIZE] [SECONDS]\n");
        return 2;
    }
    int port = atoi(argv[1]);
    const char* path = argc > 2 ? argv[2] : "/rooms/bench";
    int members = argc > 3 ? atoi(argv[3]) : 1000, window = argc > 4 ? atoi(argv[4]) : 8;
    size_t size = argc > 5 ? (size_t)atoi(argv[5]) : 64;
    double secs = argc > 6 ? atof(argv[6]) : 5;
    if (size > 60000 || window < 1 || members < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    char msg[65600], req[1024];
    size_t mlen = frame(msg, size);
    int rlen =
        snprintf(req, sizeof req,
                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                 path, port);
    int ep = epoll_create1(0), one = 1, total = members + 1, ready = 0;
    conn* cs = calloc((size_t)total, sizeof(conn));
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < total; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (void*)&a, sizeof a)) {
            perror("connect");
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (write(fd, req, rlen) != rlen) {
            perror("write");
            return 1;
        }
        cs[i].fd = fd;
        cs[i].sender = i == members;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    conn* sender = &cs[members];
    long long delivered = 0, sent = 0, countedDelivered = 0, countedSent = 0;
    double start = 0, warm = 0, end = 0, deadline = now() + 30;
    int counting = 0;
    struct epoll_event evs[512];
    static char out[65600 * 64];
    for (;;) {
        double t = now();
        if (ready == total && start == 0) {
            start = t;
            warm = t + 1.0;
            end = warm + secs;
        }
        if (start > 0 && t >= end) break;
        if (start == 0 && t > deadline) {
            fprintf(stderr, "only %d of %d handshakes done\n", ready, total);
            return 1;
        }
        if (start > 0 && !counting && t >= warm) {
            counting = 1;
            countedDelivered = delivered;
            countedSent = sent;
        }
        /* keep WINDOW messages in flight: sent - delivered/members */
        if (start > 0) {
            long long inflight = sent - delivered / members;
            if (inflight < window) {
                size_t o = 0;
                for (long long w = inflight; w < window; w++) {
                    memcpy(out + o, msg, mlen);
                    o += mlen;
                    sent++;
                }
                if (write(sender->fd, out, o) < 0) {
                    perror("send");
                    return 1;
                }
            }
        }
        int n = epoll_wait(ep, evs, 512, 100);
        for (int k = 0; k < n; k++) {
            conn* c = evs[k].data.ptr;
            ssize_t r = read(c->fd, c->buf + c->have, sizeof c->buf - c->have);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN) continue;
                fprintf(stderr, "connection closed by server\n");
                return 1;
            }
            c->have += (size_t)r;
            size_t off = 0;
            if (!c->upgraded) {
                char* e = memmem(c->buf, c->have, "\r\n\r\n", 4);
                if (!e) continue;
                if (strncmp(c->buf, "HTTP/1.1 101", 12)) {
                    fprintf(stderr, "handshake refused: %.40s\n", c->buf);
                    return 1;
                }
                c->upgraded = 1;
                ready++;
                off = (size_t)(e + 4 - c->buf);
            }
            for (;;) { /* parse server frames (unmasked) */
                if (c->have - off < 2) break;
                unsigned char b1 = (unsigned char)c->buf[off + 1];
                size_t len = b1 & 0x7f, hl = 2;
                if (len == 126) {
                    if (c->have - off < 4) break;
                    len = ((unsigned char)c->buf[off + 2] << 8) | (unsigned char)c->buf[off + 3];
                    hl = 4;
                } else if (len == 127) {
                    fprintf(stderr, "unexpected huge frame\n");
                    return 1;
                }
                if (c->have - off < hl + len) break;
                int op = c->buf[off] & 0x0f;
                if (!c->sender && (op == 1 || op == 2)) delivered++;
                off += hl + len;
            }
            memmove(c->buf, c->buf + off, c->have - off);
            c->have -= off;
        }
    }
    printf("delivered/s %.0f  sent/s %.0f  (members %d window %d size %zu)\n",
           (delivered - countedDelivered) / secs, (sent - countedSent) / secs, members, window, size);
    return 0;
}
