// Client TLS contexts (load generator, replay): ALPN, verification, SNI and errors.
#include "tls/client_tls.h"

#include "tls/suites.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>

namespace portico::tls {

namespace {
bool ipLiteral(const std::string& host) {
    unsigned char buf[16];
    return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}
} // namespace

std::string sslErrorText() {
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (!e) return "connection closed during the handshake";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}

std::unique_ptr<ClientTls> makeClientTls(const ClientTlsOptions& o, std::string& error) {
    auto t = std::make_unique<ClientTls>();
    t->ctx = {SSL_CTX_new(TLS_client_method()), SSL_CTX_free};
    SSL_CTX* ctx = t->ctx.get();
    if (!ctx) {
        error = "TLS: " + sslErrorText();
        return nullptr;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_ciphersuites(ctx, kTls13Suites); // offered AES-128-GCM first, as h2load does
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!o.alpn.empty()) {
        std::string wire;
        for (const auto& p : o.alpn) {
            wire += static_cast<char>(p.size());
            wire += p;
        }
        SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned>(wire.size()));
    }
    const bool ip = ipLiteral(o.host);
    if (!ip) t->sni = o.host;
    if (o.insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
        SSL_CTX_set_default_verify_paths(ctx);
        if (!o.caFile.empty() && SSL_CTX_load_verify_locations(ctx, o.caFile.c_str(), nullptr) != 1) {
            error = "cannot load CA certificates from '" + o.caFile + "': " + sslErrorText();
            return nullptr;
        }
        t->verifyHost = o.host;
        t->verifyIp = ip;
    }
    ERR_clear_error();
    return t;
}

std::unique_ptr<ClientTls> clientTlsFor(const ClientTls& base, const std::string& host) {
    auto t = std::make_unique<ClientTls>();
    SSL_CTX_up_ref(base.ctx.get());
    t->ctx = {base.ctx.get(), SSL_CTX_free};
    const bool ip = ipLiteral(host);
    if (!ip) t->sni = host;
    if (!base.verifyHost.empty()) { // verifying
        t->verifyHost = host;
        t->verifyIp = ip;
    }
    return t;
}

void ClientTls::prepare(SSL* ssl) const {
    if (!sni.empty()) SSL_set_tlsext_host_name(ssl, sni.c_str());
    if (!verifyHost.empty()) {
        if (verifyIp)
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), verifyHost.c_str());
        else
            SSL_set1_host(ssl, verifyHost.c_str());
    }
    SSL_set_connect_state(ssl);
}

std::string handshakeError(SSL* ssl, const ClientTls& tls, std::string_view address) {
    const long verify = SSL_get_verify_result(ssl);
    if (!tls.verifyHost.empty() && verify != X509_V_OK) {
        ERR_clear_error();
        return "TLS handshake with " + std::string(address) +
               " failed: certificate verification: " + X509_verify_cert_error_string(verify) + " (host " +
               tls.verifyHost + ")";
    }
    return "TLS handshake with " + std::string(address) + " failed: " + sslErrorText();
}

} // namespace portico::tls
