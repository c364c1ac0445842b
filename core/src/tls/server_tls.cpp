// OpenSSL server contexts for a listener (see server_tls.h).
#include "tls/server_tls.h"
#include <portico/http/ascii.h>

#include "tls/socket_bio.h"
#include "tls/suites.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>

namespace portico::tls {

namespace {

// Mozilla's "intermediate" list for TLS 1.2.
constexpr char kCiphers12[] = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                              "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                              "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::string lastSslError() {
    unsigned long e = ERR_peek_last_error();
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    // "error:0A00018E:SSL routines::ca md too weak" → the part after the last ':' is the reason.
    std::string s(buf);
    auto colon = s.rfind(':');
    return e == 0 ? "unknown error" : (colon == std::string::npos ? s : s.substr(colon + 1));
}

using http::lower;

// "a.example.test" matches "*.example.test" (one or more labels, as the router's wildcard names).
bool nameMatches(std::string_view pattern, std::string_view name) {
    if (pattern.starts_with("*.")) {
        std::string_view suffix = pattern.substr(1); // ".example.test"
        return name.size() > suffix.size() && name.ends_with(suffix);
    }
    return pattern == name;
}

int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned inlen, void* arg) {
    const bool h2 = arg != nullptr;
    // RFC 7301 §3.2: the server picks by its own preference among what the client offers.
    for (std::string_view want : {std::string_view("h2"), std::string_view("http/1.1")}) {
        if (want == "h2" && !h2) continue;
        for (unsigned i = 0; i < inlen;) {
            unsigned len = in[i];
            if (i + 1 + len > inlen) break;
            if (std::string_view(reinterpret_cast<const char*>(in + i + 1), len) == want) {
                *out = in + i + 1;
                *outlen = static_cast<unsigned char>(len);
                return SSL_TLSEXT_ERR_OK;
            }
            i += 1 + len;
        }
    }
    // No protocol in common: go on without ALPN (HTTP/1.1), as nginx does for old clients.
    return SSL_TLSEXT_ERR_NOACK;
}

SSL_CTX* newContext(bool h2, std::string& error) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        error = "cannot create a TLS context: " + lastSslError();
        return nullptr;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(ctx, kCiphers12);
    SSL_CTX_set_ciphersuites(ctx, kTls13Suites); // tls/suites.h: AES-128-GCM first
    SSL_CTX_set_options(ctx,
                        SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
    // Partial writes: a non-blocking SSL_write returns after each record it could send. Record
    // buffers stay while a connection is busy and are given back once it is idle (connections call
    // io::transportReleaseIdleBuffers), not after every read and write as SSL_MODE_RELEASE_BUFFERS
    // would.
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Read whole socket buffers into OpenSSL (one read(2) for several records instead of two per
    // record: header, then body).
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    static const unsigned char kSid[] = "portico";
    SSL_CTX_set_session_id_context(ctx, kSid, sizeof kSid - 1);
    SSL_CTX_set_alpn_select_cb(ctx, selectAlpn, h2 ? reinterpret_cast<void*>(1) : nullptr);
    return ctx;
}

bool useFiles(SSL_CTX* ctx, const config::TlsFiles& f, std::string& error) {
    if (SSL_CTX_use_certificate_chain_file(ctx, f.cert.c_str()) != 1) {
        error = f.cert + ": cannot load the certificate chain: " + lastSslError();
        return false;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, f.key.c_str(), SSL_FILETYPE_PEM) != 1) {
        error = f.key + ": cannot load the private key: " + lastSslError();
        return false;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        error = f.key + ": does not match the certificate in " + f.cert;
        ERR_clear_error();
        return false;
    }
    return true;
}

bool usePem(SSL_CTX* ctx, const PemPair& pem, std::string& error) {
    BIO* certs = BIO_new_mem_buf(pem.chain.data(), static_cast<int>(pem.chain.size()));
    X509* leaf = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr);
    bool ok = leaf && SSL_CTX_use_certificate(ctx, leaf) == 1;
    X509_free(leaf);
    while (ok) {
        X509* extra = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr);
        if (!extra) break;
        if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
            X509_free(extra);
            ok = false;
        }
    }
    BIO_free(certs);
    ERR_clear_error(); // the end of the PEM stream is reported as an error
    if (!ok) {
        error = "issued certificate is not usable";
        return false;
    }
    BIO* keyBio = BIO_new_mem_buf(pem.key.data(), static_cast<int>(pem.key.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(keyBio, nullptr, nullptr, nullptr);
    BIO_free(keyBio);
    ok = key && SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
    EVP_PKEY_free(key);
    if (!ok) {
        error = "issued key is not usable: " + lastSslError();
        return false;
    }
    return true;
}

// A server-side SSL on `ctx` for the socket `fd`, in accept state; nullptr when OpenSSL cannot.
SSL* serverSsl(SSL_CTX* ctx, int fd) {
    SSL* ssl = SSL_new(ctx);
    if (!ssl) return nullptr;
    if (!attachSocketBio(ssl, fd)) {
        SSL_free(ssl);
        return nullptr;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

} // namespace

std::shared_ptr<ServerTls> ServerTls::create(const config::Config& cfg, const config::ListenTls& listen,
                                             Issuer issuer, std::string& error) {
    std::shared_ptr<ServerTls> t(new ServerTls());
    t->h2_ = cfg.http2.enabled;
    auto make = [&]() -> SSL_CTX* {
        SSL_CTX* ctx = newContext(t->h2_, error);
        if (ctx) t->owned_.push_back(ctx);
        return ctx;
    };
    if (!(t->default_ = make())) return nullptr;
    if (listen.autoCa) {
        if (!issuer) {
            error = "tls: auto needs the local development CA";
            return nullptr;
        }
        t->issuer_ = std::move(issuer);
        t->servedNames_ = {"localhost", "127.0.0.1", "::1"};
        for (const auto& vh : cfg.vhosts)
            for (const auto& n : vh.names)
                if (n != "*") t->servedNames_.push_back(lower(n));
        auto pem = t->issuer_("localhost", error);
        if (!pem || !usePem(t->default_, *pem, error)) {
            error = "local CA: " + error;
            return nullptr;
        }
        t->issued_.emplace("localhost", t->default_);
    } else if (!useFiles(t->default_, listen.files, error)) {
        return nullptr;
    }
    for (const auto& vh : cfg.vhosts) {
        if (!vh.tls) continue;
        SSL_CTX* ctx = make();
        if (!ctx || !useFiles(ctx, *vh.tls, error)) return nullptr;
        for (const auto& n : vh.names)
            if (n != "*") t->vhostNames_.emplace_back(lower(n), ctx);
    }
    // Exact names before wildcards, as vhost selection does.
    std::stable_sort(t->vhostNames_.begin(), t->vhostNames_.end(), [](const auto& a, const auto& b) {
        return !a.first.starts_with("*.") && b.first.starts_with("*.");
    });
    for (SSL_CTX* ctx : t->owned_) {
        SSL_CTX_set_tlsext_servername_callback(ctx, onClientHelloName);
        SSL_CTX_set_tlsext_servername_arg(ctx, t.get());
    }
    return t;
}

std::shared_ptr<ServerTls> ServerTls::createIntercepting(Issuer issuer, bool h2, std::string& error) {
    std::shared_ptr<ServerTls> t(new ServerTls());
    t->h2_ = h2;
    t->anyName_ = true;
    t->issuer_ = std::move(issuer);
    if (!t->issuer_) {
        error = "interception needs the local development CA";
        return nullptr;
    }
    // The default context (no SNI, no name given) has localhost's leaf.
    t->default_ = t->contextFor("localhost");
    if (!t->default_) {
        error = "local CA: cannot issue a certificate";
        return nullptr;
    }
    return t;
}

void ServerTls::markRefused(std::string origin) {
    std::lock_guard lock(refusedMutex_);
    if (refused_.size() < kMaxInterceptNames) refused_.insert(std::move(origin));
}

bool ServerTls::refused(std::string_view origin) const {
    std::lock_guard lock(refusedMutex_);
    return refused_.find(origin) != refused_.end();
}

SSL* ServerTls::newSslFor(int fd, std::string_view name) {
    SSL_CTX* ctx = contextFor(name);
    return ctx ? serverSsl(ctx, fd) : nullptr;
}

ServerTls::~ServerTls() {
    for (SSL_CTX* ctx : owned_)
        SSL_CTX_free(ctx);
}

SSL* ServerTls::newSsl(int fd) const { return serverSsl(default_, fd); }

SSL_CTX* ServerTls::contextFor(std::string_view rawName) {
    std::string name = lower(rawName);
    if (!name.empty() && name.back() == '.') name.pop_back();
    for (const auto& [pattern, ctx] : vhostNames_)
        if (nameMatches(pattern, name)) return ctx;
    if (!issuer_) return nullptr;
    bool served = anyName_ || std::any_of(servedNames_.begin(), servedNames_.end(),
                                          [&](const std::string& p) { return nameMatches(p, name); });
    if (!served) return nullptr; // never issue for a name the config doesn't serve
    std::lock_guard lock(issuedMutex_);
    if (auto it = issued_.find(name); it != issued_.end()) return it->second;
    if (issued_.size() >= kMaxInterceptNames) return nullptr;
    std::string error;
    auto pem = issuer_(name, error);
    if (!pem) return nullptr;
    SSL_CTX* ctx = newContext(h2_, error);
    if (!ctx) return nullptr;
    if (!usePem(ctx, *pem, error)) {
        SSL_CTX_free(ctx);
        return nullptr;
    }
    SSL_CTX_set_tlsext_servername_callback(ctx, onClientHelloName);
    SSL_CTX_set_tlsext_servername_arg(ctx, this);
    owned_.push_back(ctx);
    issued_.emplace(name, ctx);
    return ctx;
}

int ServerTls::onClientHelloName(SSL* ssl, int*, void* arg) {
    auto* self = static_cast<ServerTls*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!name) return SSL_TLSEXT_ERR_OK; // no SNI (e.g. an IP address): the default certificate
    SSL_CTX* ctx = self->contextFor(name);
    if (ctx && ctx != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, ctx);
    return SSL_TLSEXT_ERR_OK;
}

} // namespace portico::tls
