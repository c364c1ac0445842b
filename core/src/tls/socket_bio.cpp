// Socket BIO with drain tracking (see socket_bio.h).
#include "tls/socket_bio.h"

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace portico::tls {

namespace {

SocketBioState* stateOf(BIO* b) { return static_cast<SocketBioState*>(BIO_get_data(b)); }

int bioRead(BIO* b, char* out, std::size_t len, std::size_t* got) {
    SocketBioState* st = stateOf(b);
    BIO_clear_retry_flags(b);
    *got = 0;
    if (st->pendingBytes > 0) {
        const std::size_t n = std::min(len, st->pendingBytes);
        std::memcpy(out, st->pending, n);
        st->pending += n;
        st->pendingBytes -= n;
        *got = n;
        st->retried = false;
        return 1;
    }
    if (st->readPending || st->drained) {
        BIO_set_retry_read(b);
        st->retried = true;
        return 0;
    }
    for (;;) {
        const ssize_t n = ::recv(st->fd, out, len, 0);
        if (n > 0) {
            if (st->trackDrained && static_cast<std::size_t>(n) < len) st->drained = true;
            *got = static_cast<std::size_t>(n);
            st->retried = false;
            return 1;
        }
        if (n == 0) {
            BIO_set_flags(b, BIO_FLAGS_IN_EOF); // lets OpenSSL tell an unexpected EOF from an alert
            return 0;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (st->trackDrained) st->drained = true;
            BIO_set_retry_read(b);
            st->retried = true;
        }
        return 0;
    }
}

int bioWrite(BIO* b, const char* in, std::size_t len, std::size_t* put) {
    SocketBioState* st = stateOf(b);
    BIO_clear_retry_flags(b);
    *put = 0;
    for (;;) {
        const ssize_t n = ::send(st->fd, in, len, MSG_NOSIGNAL);
        if (n >= 0) {
            *put = static_cast<std::size_t>(n);
            return 1;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
        return 0;
    }
}

long bioCtrl(BIO* b, int cmd, long, void* ptr) {
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
    case BIO_CTRL_EOF:
        return (BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0) ? 1 : 0;
    case BIO_C_GET_FD:
        if (ptr) *static_cast<int*>(ptr) = stateOf(b)->fd;
        return stateOf(b)->fd;
    default:
        return 0;
    }
}

int bioCreate(BIO* b) {
    BIO_set_data(b, new SocketBioState);
    BIO_set_init(b, 1);
    return 1;
}

int bioDestroy(BIO* b) {
    delete stateOf(b);
    BIO_set_data(b, nullptr);
    return 1;
}

struct Method {
    BIO_METHOD* method = nullptr;
    int type = 0;
    Method() {
        type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR;
        method = BIO_meth_new(type, "portico socket");
        if (!method) return;
        BIO_meth_set_read_ex(method, bioRead);
        BIO_meth_set_write_ex(method, bioWrite);
        BIO_meth_set_ctrl(method, bioCtrl);
        BIO_meth_set_create(method, bioCreate);
        BIO_meth_set_destroy(method, bioDestroy);
    }
    ~Method() { BIO_meth_free(method); }
};

const Method& method() {
    static const Method m; // thread-safe initialisation; shared read-only by every worker
    return m;
}

} // namespace

bool attachSocketBio(SSL* ssl, int fd) {
    const BIO_METHOD* m = method().method;
    if (!m) return false;
    BIO* b = BIO_new(m);
    if (!b) return false;
    stateOf(b)->fd = fd;
    SSL_set_bio(ssl, b, b); // one BIO for both directions: SSL takes a single reference
    return true;
}

SocketBioState* socketBioState(SSL* ssl) {
    BIO* b = ssl ? SSL_get_rbio(ssl) : nullptr;
    if (!b || method().method == nullptr || BIO_method_type(b) != method().type) return nullptr;
    return stateOf(b);
}

} // namespace portico::tls
