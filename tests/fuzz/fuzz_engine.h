// For the fuzz targets that need the whole server (HTTP/2 sessions, WebSocket sessions): one
// in-process engine on 127.0.0.1 (port 0, one worker) started on first use, and a blocking
// loopback client that writes an input, half-closes and reads until the server closes.
#pragma once

#include "fuzz_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace portico::fuzz {

/// The engine, started once: echo and room WebSocket routes, a body echo, capture on (so the
/// capture path is fuzzed too), short timeouts so stalled inputs end quickly.
inline std::uint16_t enginePort() {
    static engine::Engine* engine = nullptr;
    static std::uint16_t port = 0;
    if (engine) return port;
    const char* yaml = "workers: 1\n"
                       "listen: [\"127.0.0.1:0\"]\n"
                       "limits: {header_timeout: 1s, body_timeout: 1s, idle_timeout: 1s, write_timeout: 1s,"
                       " drain_timeout: 100ms}\n"
                       "capture: {enabled: true, max_records: 1000}\n"
                       "vhosts:\n"
                       "  - names: [localhost]\n"
                       "    routes:\n"
                       "      - path: /ws\n        websocket: echo\n"
                       "      - path: /rooms/:room\n        websocket: room\n"
                       "      - path: /echo\n        respond: {body: \"{{body}}\"}\n"
                       "      - path: /\n        respond: {body: hello}\n";
    auto r = config::loadConfigText(yaml, "fuzz-engine.yaml", "/");
    if (!r.ok()) {
        for (const auto& e : r.errors)
            std::fprintf(stderr, "%s\n", e.toString().c_str());
        std::abort();
    }
    engine = new engine::Engine(); // never destroyed: the process ends with the fuzzer
    std::string error;
    if (!engine->start(r.config, error)) {
        std::fprintf(stderr, "engine: %s\n", error.c_str());
        std::abort();
    }
    port = engine->endpoints().front().port;
    return port;
}

/// LLVMFuzzerInitialize of the engine targets: starts the engine and, under libFuzzer, turns off its
/// leak check after each input (`-detect_leaks=0`, placed first so a flag given on the command line
/// still wins). The engine's thread allocates and frees on its own schedule (capture records, pooled
/// buffers), so an input's malloc and free counts seldom match, and LeakSanitizer then scanned the
/// whole heap after nearly every input: 90 % of the time, ws_frames ran 111 inputs/s instead of
/// ~1,000. Leaks stay checked by the ASan+UBSan test suite (LSan at exit).
inline void initEngineTarget([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) {
#ifdef PORTICO_LIBFUZZER
    static char flag[] = "-detect_leaks=0";
    static std::vector<char*> args;
    args.assign(*argv, *argv + *argc);
    args.insert(args.begin() + (args.empty() ? 0 : 1), flag);
    args.push_back(nullptr);
    *argc = static_cast<int>(args.size()) - 1;
    *argv = args.data();
#endif
    enginePort();
}

// libFuzzer's -timeout timer is a SIGALRM every few seconds, installed without SA_RESTART: any of
// the blocking calls below can fail with EINTR, which is not an answer from the server.

/// A connected loopback socket, or -1.
inline int connectLoopback(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        // Interrupted, the connection completes in the background: wait for it, then ask how it went.
        int err = errno;
        if (err == EINTR) {
            pollfd p{fd, POLLOUT, 0};
            int ready;
            while ((ready = ::poll(&p, 1, 2000)) < 0 && errno == EINTR) {
            }
            socklen_t len = sizeof err;
            if (ready <= 0)
                err = ETIMEDOUT;
            else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
        }
        if (err != 0) {
            ::close(fd);
            return -1;
        }
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

inline bool writeAll(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

/// Reads until the server closes, `until` appears (returns true then), or `budget` passes.
inline bool readUntil(int fd, std::string& got, std::string_view until, std::chrono::milliseconds budget) {
    const auto end = std::chrono::steady_clock::now() + budget;
    char buf[16384];
    for (;;) {
        if (!until.empty() && got.find(until) != std::string::npos) return true;
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now())
                .count();
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return false;
        const auto n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        if (got.size() < (1u << 20)) got.append(buf, static_cast<std::size_t>(n));
    }
}

/// Sends `prefix` then `input`, half-closes, and drains the answer (bounded by 2 s) so the server
/// processes all of it before the next input.
inline void exchange(std::string_view prefix, std::string_view input, std::string_view waitFor = {}) {
    const int fd = connectLoopback(enginePort());
    PORTICO_FUZZ_CHECK(fd >= 0); // the server must keep accepting whatever came before
    std::string got;
    if (writeAll(fd, prefix) && (waitFor.empty() || readUntil(fd, got, waitFor, std::chrono::seconds(2)))) {
        writeAll(fd, input);
        ::shutdown(fd, SHUT_WR);
        readUntil(fd, got, {}, std::chrono::seconds(2));
    }
    ::close(fd);
}

} // namespace portico::fuzz
