// The TLS client contexts of https:// upstreams (h2_client.h), one set per thread.
#include "client/h2_client.h"

#include "tls/client_tls.h"
#include "tls/suites.h"

#include <openssl/ssl.h>

#include <map>
#include <memory>

namespace portico::client {

void SslFree::operator()(SSL* ssl) const { SSL_free(ssl); }

// One per thread, freed when the thread ends (a raw thread_local pointer leaked it: LSan).
SSL_CTX* h2UpstreamTlsContext() {
    struct Free {
        void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
    };
    thread_local std::unique_ptr<SSL_CTX, Free> ctx{[] {
        SSL_CTX* c = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
        SSL_CTX_set_ciphersuites(c, tls::kTls13Suites);
        // A dev server's upstreams use local or self-signed certificates: not verified.
        SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);
        SSL_CTX_set_mode(c, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
        // h2 first; an upstream that selects http/1.1 (or nothing) is handed to the HTTP/1.1
        // client (h2_conn.cpp, handOverToHttp1).
        static const unsigned char alpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        SSL_CTX_set_alpn_protos(c, alpn, sizeof alpn);
        return c;
    }()};
    return ctx.get();
}

// One per thread and host, freed when the thread ends.
const tls::ClientTls* http1UpstreamTls(const std::string& host, std::string& error) {
    thread_local std::map<std::string, std::unique_ptr<tls::ClientTls>, std::less<>> contexts;
    auto& tls = contexts[host];
    if (!tls) {
        tls::ClientTlsOptions options;
        options.host = host;
        options.alpn = {"http/1.1"};
        options.insecure = true;
        tls = tls::makeClientTls(options, error);
        // A close-delimited response (HTTP/1.0, "Connection: close" without a length) ends at the
        // upstream's close, which many dev backends (Python's ssl module, for one) make without a
        // close_notify: read as the end, as curl does (RFC 9112 §9.8 asks for the alert, but a body
        // with a length or chunks is still checked whole by its framing).
        if (tls) SSL_CTX_set_options(tls->ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
    }
    return tls.get();
}

} // namespace portico::client
