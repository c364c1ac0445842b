// What a forward proxy's first CONNECT to a new name costs on the worker (issue 28: "leaf minting:
// the first request to a new host adds <= 2 ms"): ServerTls::newSslFor for N names never seen (the
// local CA issues a leaf, writes it to the cache, and a context is built for it), the same names
// again (cached), and LocalCa::leafFor alone. Built and run by leaf_mint.sh.
#include "tls/server_tls.h"

#include <portico/tls/local_ca.h>

#include <openssl/ssl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

using namespace portico;
using Clock = std::chrono::steady_clock;

namespace {
double us(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}
double at(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}
} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: leaf_mint DATA_DIR [N=100]\n");
        return 2;
    }
    const int n = argc > 2 ? std::atoi(argv[2]) : 100;
    std::string err;
    auto ca = tls::LocalCa::openOrCreate(argv[1], err);
    if (!ca) {
        std::fprintf(stderr, "local CA: %s\n", err.c_str());
        return 1;
    }
    tls::Issuer issuer = [ca](std::string_view name, std::string& e) -> std::optional<tls::PemPair> {
        auto c = ca->leafFor(name, e);
        if (!c) return std::nullopt;
        return tls::PemPair{c->chainPem, c->keyPem};
    };
    auto server = tls::ServerTls::createIntercepting(issuer, true, err);
    int fds[2];
    if (!server || ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        std::fprintf(stderr, "set-up: %s\n", err.c_str());
        return 1;
    }
    std::vector<double> fresh, cached, leafOnly;
    for (int i = 0; i < n; ++i) {
        const std::string name = "n" + std::to_string(i) + "-" + std::to_string(::getpid()) + ".test";
        const auto t0 = Clock::now();
        SSL* a = server->newSslFor(fds[0], name);
        const auto t1 = Clock::now();
        SSL* b = server->newSslFor(fds[0], name);
        const auto t2 = Clock::now();
        auto leaf = ca->leafFor("leaf-" + name, err);
        const auto t3 = Clock::now();
        if (!a || !b || !leaf) {
            std::fprintf(stderr, "failed: %s\n", err.c_str());
            return 1;
        }
        SSL_free(a);
        SSL_free(b);
        fresh.push_back(us(t0, t1));
        cached.push_back(us(t1, t2));
        leafOnly.push_back(us(t2, t3));
    }
    std::printf("%d names, microseconds p50 / p90 / max\n", n);
    std::printf("new name (leaf issued and cached, context built)  %6.0f %6.0f %6.0f\n", at(fresh, 0.5),
                at(fresh, 0.9), at(fresh, 1));
    std::printf("same name again (cached context)                  %6.0f %6.0f %6.0f\n", at(cached, 0.5),
                at(cached, 0.9), at(cached, 1));
    std::printf("LocalCa::leafFor alone (issue, write the cache)    %6.0f %6.0f %6.0f\n", at(leafOnly, 0.5),
                at(leafOnly, 0.9), at(leafOnly, 1));
}
