/* The physical-limit reference for HTTP/2 clients (issue 7's "portico bench --h2" against h2load):
 * one thread, level-triggered epoll, cleartext HTTP/2 with prior knowledge (RFC 9113 §3.3) on
 * 127.0.0.1:PORT. It parses frame headers only and never decodes HPACK: every frame that carries
 * END_STREAM (a HEADERS or DATA frame, RFC 9113 §6.1, §6.2) gets a canned response on its stream,
 * HEADERS (":status: 200", "content-length: 13") + DATA "Hello, World!" with END_STREAM, all the
 * answers to one read go out in one write (waited out if the socket buffer fills). SETTINGS are
 * acknowledged (§6.5.3), PINGs answered (§6.7), DATA is credited back with WINDOW_UPDATE (§6.9),
 * GOAWAY or a malformed preface closes the connection. Like ../shared/bench/limit_server.c for
 * HTTP/1.1, nothing real can beat it on one core, so whichever client drives it faster is the
 * faster client.
 * Build: gcc -O2 -o h2_limit_server h2_limit_server.c; run: h2_limit_server PORT. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MAX_FD = 65536, IN_CAP = 1 << 18, OUT_CAP = 1 << 20 };

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; /* 24 bytes */

/* Per connection: bytes of the preface still expected, and a partial frame carried between reads. */
struct conn {
  int preface_left;
  size_t held;
  unsigned char *buf;
};
static struct conn conns[MAX_FD];
static unsigned char out[OUT_CAP];

static size_t put_frame(size_t at, uint32_t len, uint8_t type, uint8_t flags, uint32_t stream, const void *payload) {
  if (at + 9 + len > OUT_CAP) return at;
  unsigned char *p = out + at;
  p[0] = len >> 16; p[1] = len >> 8; p[2] = len;
  p[3] = type; p[4] = flags;
  p[5] = (stream >> 24) & 0x7f; p[6] = stream >> 16; p[7] = stream >> 8; p[8] = stream;
  if (len) memcpy(p + 9, payload, len);
  return at + 9 + len;
}

/* Writes all `len` bytes; a full socket buffer is waited out (at most 1 s per wait), which stalls
   the other connections but never loses an answer. Returns -1 on error or timeout. */
static int write_all(int fd, const unsigned char *p, size_t len) {
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w > 0) { p += w; len -= (size_t)w; continue; }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      if (poll(&pf, 1, 1000) == 1) continue;
    }
    return -1;
  }
  return 0;
}

static void drop(int ep, int fd) {
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, 0);
  close(fd);
  free(conns[fd].buf);
  memset(&conns[fd], 0, sizeof conns[fd]);
}

int main(int argc, char **argv) {
  /* :status 200 is static-table index 8 (RFC 7541 Appendix A); content-length (index 28) as a
     literal without indexing: 0x0f 0x0d = 15 + 13 in a 4-bit prefix, then the 2-byte value. */
  static const unsigned char RESP_HEADERS[] = {0x88, 0x0f, 0x0d, 0x02, '1', '3'};
  static const char BODY[] = "Hello, World!";
  int port = argc > 1 ? atoi(argv[1]) : 8080;
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(ls, (void *)&a, sizeof a) || listen(ls, 4096)) { perror("bind"); return 1; }
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls}, evs[512];
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  for (;;) {
    int n = epoll_wait(ep, evs, 512, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ls) {
        int c;
        while ((c = accept4(ls, 0, 0, SOCK_NONBLOCK)) >= 0) {
          if (c >= MAX_FD) { close(c); continue; }
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conns[c].preface_left = 24;
          conns[c].held = 0;
          conns[c].buf = malloc(IN_CAP);
          /* Our SETTINGS: MAX_CONCURRENT_STREAMS (0x3) = 1000; then the connection window to 1 GiB. */
          static const unsigned char settings[] = {0, 3, 0, 0, 0x03, 0xe8};
          static const unsigned char window[] = {0x3f, 0xff, 0x00, 0x00};
          size_t len = put_frame(0, sizeof settings, 0x4, 0, 0, settings);
          len = put_frame(len, sizeof window, 0x8, 0, 0, window);
          if (!conns[c].buf || write_all(c, out, len) < 0) { close(c); free(conns[c].buf); conns[c].buf = 0; continue; }
          struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
        }
        continue;
      }
      struct conn *k = &conns[fd];
      ssize_t r = read(fd, k->buf + k->held, IN_CAP - k->held);
      if (r <= 0) { if (r < 0 && errno == EAGAIN) continue; drop(ep, fd); continue; }
      size_t have = k->held + (size_t)r, at = 0, len = 0;
      int bad = 0;
      if (k->preface_left) {
        size_t take = have < (size_t)k->preface_left ? have : (size_t)k->preface_left;
        if (memcmp(k->buf, PREFACE + 24 - k->preface_left, take) != 0) bad = 1;
        k->preface_left -= (int)take;
        at = take;
      }
      while (!bad && have - at >= 9) {
        const unsigned char *f = k->buf + at;
        uint32_t flen = (uint32_t)f[0] << 16 | (uint32_t)f[1] << 8 | f[2];
        uint8_t type = f[3], flags = f[4];
        uint32_t stream = ((uint32_t)f[5] << 24 | (uint32_t)f[6] << 16 | (uint32_t)f[7] << 8 | f[8]) & 0x7fffffff;
        if (flen > IN_CAP - 9) { bad = 1; break; }
        if (have - at < 9 + flen) break;
        if (type == 0x0 && flen) { /* DATA: credit the connection and the stream back */
          unsigned char inc[4] = {flen >> 24, flen >> 16, flen >> 8, flen};
          len = put_frame(len, 4, 0x8, 0, 0, inc);
          if (!(flags & 0x1)) len = put_frame(len, 4, 0x8, 0, stream, inc);
        }
        if ((type == 0x0 || type == 0x1) && (flags & 0x1) && stream) {
          len = put_frame(len, sizeof RESP_HEADERS, 0x1, 0x4, stream, RESP_HEADERS);
          len = put_frame(len, sizeof BODY - 1, 0x0, 0x1, stream, BODY);
        } else if (type == 0x4 && !(flags & 0x1)) {
          len = put_frame(len, 0, 0x4, 0x1, 0, 0);
        } else if (type == 0x6 && !(flags & 0x1) && flen == 8) {
          len = put_frame(len, 8, 0x6, 0x1, 0, f + 9);
        } else if (type == 0x7) {
          bad = 1;
        }
        at += 9 + flen;
      }
      k->held = have - at;
      if (k->held) memmove(k->buf, k->buf + at, k->held);
      if (len && write_all(fd, out, len) < 0) bad = 1;
      if (bad) drop(ep, fd);
    }
  }
}
