// Replay over a blocking loopback-checked HTTP/1.1 client; comparison; curl command lines.
#include <portico/capture/replay.h>

#include "capture/recorder.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::capture {

namespace {
std::string lower(std::string_view s) {
    std::string o(s);
    for (char& c : o)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
}

struct Url {
    std::string scheme, host, port, prefix;
};
bool parseBase(std::string_view u, Url& out, std::string& error) {
    auto p = u.find("://");
    if (p == std::string_view::npos) {
        error = "not a URL: " + std::string(u);
        return false;
    }
    out.scheme = lower(u.substr(0, p));
    std::string_view rest = u.substr(p + 3);
    auto slash = rest.find('/');
    std::string_view auth = rest.substr(0, slash);
    out.prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
    while (!out.prefix.empty() && out.prefix.back() == '/')
        out.prefix.pop_back();
    if (!auth.empty() && auth.front() == '[') {
        auto close = auth.find(']');
        out.host = std::string(auth.substr(1, close - 1));
        if (close + 1 < auth.size() && auth[close + 1] == ':') out.port = std::string(auth.substr(close + 2));
    } else {
        auto colon = auth.rfind(':');
        out.host = std::string(auth.substr(0, colon));
        if (colon != std::string_view::npos) out.port = std::string(auth.substr(colon + 1));
    }
    if (out.port.empty()) out.port = out.scheme == "https" ? "443" : "80";
    if (out.scheme != "http") {
        error = out.scheme + ": only http:// targets can be replayed for now";
        return false;
    }
    return true;
}

bool loopback(const sockaddr* a) {
    if (a->sa_family == AF_INET)
        return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family == AF_INET6) {
        const auto* a6 = reinterpret_cast<const sockaddr_in6*>(a);
        if (IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr)) return true;
        if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) return a6->sin6_addr.s6_addr[12] == 127;
    }
    return false;
}

class Deadline {
public:
    explicit Deadline(std::chrono::milliseconds t) : end_(std::chrono::steady_clock::now() + t) {}
    int msLeft() const {
        auto d =
            std::chrono::duration_cast<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now())
                .count();
        return d < 0 ? 0 : static_cast<int>(d);
    }

private:
    std::chrono::steady_clock::time_point end_;
};

bool waitFd(int fd, short events, const Deadline& dl) {
    pollfd p{fd, events, 0};
    for (;;) {
        int r = ::poll(&p, 1, dl.msLeft());
        if (r > 0) return true;
        if (r == 0) return false;
        if (errno != EINTR) return false;
    }
}
} // namespace

ReplayResult replay(const Exchange& original, const ReplayOptions& options) {
    ReplayResult r;
    Exchange& e = r.exchange;
    std::string base =
        options.baseUrl.empty()
            ? (original.scheme.empty() ? std::string("http") : original.scheme) + "://" + original.authority
            : options.baseUrl;
    Url url;
    if (!parseBase(base, url, r.error)) return r;
    if (!options.body &&
        (original.flags & kRequestBodyTruncated || original.requestBody.size() < original.requestBodySize)) {
        r.error = "the captured request body was cut at " + std::to_string(original.requestBody.size()) +
                  " of " + std::to_string(original.requestBodySize) +
                  " bytes (capture.body_bytes); not replayed";
        return r;
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &res); rc != 0) {
        r.error = url.host + ": " + gai_strerror(rc);
        return r;
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
    if (!options.allowRemote)
        for (addrinfo* a = res; a; a = a->ai_next)
            if (!loopback(a->ai_addr)) {
                r.error =
                    url.host + ": not a loopback address; pass allowRemote (--allow-remote) to replay to it";
                return r;
            }
    Deadline dl(options.timeout);
    int fd = -1;
    std::string lastError = "no address";
    e.set(Phase::Accepted, nowNs());
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) continue;
        int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            int err = 0;
            socklen_t len = sizeof err;
            if (!waitFd(fd, POLLOUT, dl) || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
                lastError = err ? std::strerror(err) : "timed out";
                ::close(fd);
                fd = -1;
                continue;
            }
        } else if (rc != 0) {
            lastError = std::strerror(errno);
            ::close(fd);
            fd = -1;
        }
    }
    if (fd < 0) {
        r.error = "connect " + url.host + ":" + url.port + ": " + lastError;
        return r;
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    e.set(Phase::TlsDone, -1);

    // The request.
    e.protocol = Protocol::Http1;
    e.httpVersion = 11;
    e.scheme = "http";
    e.authority = url.host.find(':') != std::string::npos ? "[" + url.host + "]:" + url.port
                                                          : url.host + ":" + url.port;
    if ((url.port == "80")) e.authority = url.host;
    e.method = options.method.value_or(original.method.empty() ? std::string("GET") : original.method);
    std::string target = original.target;
    if (auto p = target.find("://"); p != std::string::npos) {
        auto slash = target.find('/', p + 3);
        target = slash == std::string::npos ? "/" : target.substr(slash);
    }
    if (target.empty()) target = "/";
    e.target = url.prefix + target;
    e.requestBody = options.body.value_or(original.requestBody);
    e.requestBodySize = e.requestBody.size();
    static constexpr std::string_view kSkip[] = {
        "host",           "connection", "keep-alive", "proxy-connection", "transfer-encoding",
        "content-length", "upgrade",    "te",         "http2-settings"};
    e.requestHeaders.push_back({"Host", e.authority});
    for (const auto& h : original.requestHeaders) {
        const std::string n = lower(h.name);
        if (n.empty() || n[0] == ':' || std::find(std::begin(kSkip), std::end(kSkip), n) != std::end(kSkip))
            continue;
        bool overridden = false;
        for (const auto& o : options.headers)
            if (lower(o.name) == n) overridden = true;
        if (!overridden) e.requestHeaders.push_back(h);
    }
    for (const auto& o : options.headers)
        if (!o.value.empty()) e.requestHeaders.push_back(o);
    const bool hasBody =
        !e.requestBody.empty() || e.method == "POST" || e.method == "PUT" || e.method == "PATCH";
    if (hasBody) e.requestHeaders.push_back({"Content-Length", std::to_string(e.requestBody.size())});
    e.requestHeaders.push_back({"Connection", "close"});
    std::string wire = e.method + " " + e.target + " HTTP/1.1\r\n";
    for (const auto& h : e.requestHeaders)
        wire += h.name + ": " + h.value + "\r\n";
    wire += "\r\n";
    e.requestHeadersSize = wire.size();
    wire += e.requestBody;
    e.startedUnixNs = unixNowNs();
    e.set(Phase::RequestHeaders, nowNs());
    for (std::size_t sent = 0; sent < wire.size();) {
        ssize_t n = ::send(fd, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR) && waitFd(fd, POLLOUT, dl)) continue;
        r.error = std::string("send: ") + (n < 0 ? std::strerror(errno) : "closed");
        return r;
    }
    e.set(Phase::RequestBodyDone, nowNs());

    // The response.
    std::string in;
    char buf[16384];
    auto readMore = [&]() -> int { // 1 data, 0 eof, -1 error/timeout
        for (;;) {
            ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n > 0) {
                if (e.at(Phase::ResponseFirstByte) < 0) e.set(Phase::ResponseFirstByte, nowNs());
                in.append(buf, static_cast<std::size_t>(n));
                return 1;
            }
            if (n == 0) return 0;
            if ((errno == EAGAIN || errno == EINTR) && waitFd(fd, POLLIN, dl)) continue;
            return -1;
        }
    };
    std::size_t headEnd;
    for (;;) {
        headEnd = in.find("\r\n\r\n");
        if (headEnd != std::string::npos) {
            // Interim 1xx responses are skipped.
            if (in.size() > 9 && in[9] == '1' && in.compare(9, 3, "101") != 0) {
                in.erase(0, headEnd + 4);
                continue;
            }
            break;
        }
        int rc = readMore();
        if (rc <= 0) {
            r.error = rc == 0 ? "the server closed without a response" : "no response within the timeout";
            return r;
        }
    }
    std::string_view head(in.data(), headEnd);
    if (head.size() < 12 || !head.starts_with("HTTP/1.")) {
        r.error = "not an HTTP/1.x response";
        return r;
    }
    e.status = std::atoi(std::string(head.substr(9, 3)).c_str());
    e.responseHeadersSize = headEnd + 2;
    std::string_view lines = head.substr(std::min(head.size(), head.find("\r\n") + 2));
    while (!lines.empty()) {
        auto eol = lines.find("\r\n");
        std::string_view line = lines.substr(0, eol);
        lines.remove_prefix(eol == std::string_view::npos ? lines.size() : eol + 2);
        auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ')
            v.remove_prefix(1);
        e.responseHeaders.push_back({std::string(line.substr(0, colon)), std::string(v)});
    }
    in.erase(0, headEnd + 4);
    const bool noBody = e.method == "HEAD" || e.status == 204 || e.status == 304 || e.status < 200;
    std::string body;
    if (!noBody) {
        std::string te = lower(e.responseHeader("transfer-encoding"));
        std::string_view cl = e.responseHeader("content-length");
        if (te.find("chunked") != std::string::npos) {
            for (;;) {
                auto eol = in.find("\r\n");
                if (eol == std::string::npos) {
                    if (readMore() <= 0) {
                        r.error = "truncated chunked body";
                        return r;
                    }
                    continue;
                }
                std::size_t size = std::strtoull(in.c_str(), nullptr, 16);
                if (size == 0) break;
                while (in.size() < eol + 2 + size + 2)
                    if (readMore() <= 0) {
                        r.error = "truncated chunked body";
                        return r;
                    }
                body.append(in, eol + 2, size);
                in.erase(0, eol + 2 + size + 2);
            }
        } else if (!cl.empty()) {
            const std::size_t want = std::strtoull(std::string(cl).c_str(), nullptr, 10);
            while (in.size() < want)
                if (readMore() <= 0) {
                    r.error = "truncated body";
                    return r;
                }
            body = in.substr(0, want);
        } else {
            while (readMore() > 0) {
            }
            body = in;
        }
    }
    e.set(Phase::ResponseDone, nowNs());
    e.responseBodySize = body.size();
    if (body.size() > options.bodyBytes) {
        body.resize(options.bodyBytes);
        e.flags |= kResponseBodyTruncated;
    }
    e.responseBody = std::move(body);
    r.differences = compare(original, e);
    return r;
}

std::vector<Difference> compare(const Exchange& a, const Exchange& b) {
    std::vector<Difference> d;
    if (a.status != b.status) d.push_back({"status", std::to_string(a.status), std::to_string(b.status)});
    static constexpr std::string_view kIgnored[] = {"date",    "server-timing", "age",
                                                    "expires", "connection",    "keep-alive"};
    auto collect = [](const std::vector<Header>& hs) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& h : hs) {
            std::string n = lower(h.name);
            if (n.empty() || n[0] == ':' ||
                std::find(std::begin(kIgnored), std::end(kIgnored), n) != std::end(kIgnored))
                continue;
            out.emplace_back(n, h.value);
        }
        std::stable_sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.first < y.first; });
        return out;
    };
    auto ha = collect(a.responseHeaders), hb = collect(b.responseHeaders);
    std::vector<std::string> names;
    for (auto& [n, v] : ha)
        names.push_back(n);
    for (auto& [n, v] : hb)
        names.push_back(n);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (const auto& n : names) {
        std::string va, vb;
        for (auto& [k, v] : ha)
            if (k == n) va += (va.empty() ? "" : ", ") + v;
        for (auto& [k, v] : hb)
            if (k == n) vb += (vb.empty() ? "" : ", ") + v;
        if (va != vb) d.push_back({"header " + n, va, vb});
    }
    const std::size_t common = std::min(a.responseBody.size(), b.responseBody.size());
    std::size_t at = 0;
    while (at < common && a.responseBody[at] == b.responseBody[at])
        ++at;
    if (at < common || a.responseBodySize != b.responseBodySize) {
        auto excerpt = [&](const std::string& s) {
            std::string x = s.substr(at, 40);
            for (char& c : x)
                if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '.';
            return x;
        };
        d.push_back(
            {"body",
             std::to_string(a.responseBodySize) + " bytes" +
                 (at < common ? ", at byte " + std::to_string(at) + ": " + excerpt(a.responseBody) : ""),
             std::to_string(b.responseBodySize) + " bytes" +
                 (at < common ? ", at byte " + std::to_string(at) + ": " + excerpt(b.responseBody) : "")});
    }
    return d;
}

std::string toCurl(const Exchange& e, std::string_view baseUrl) {
    auto quote = [](std::string_view s) {
        std::string o = "'";
        for (char c : s) {
            if (c == '\'')
                o += "'\\''";
            else
                o += c;
        }
        return o + "'";
    };
    std::string target = e.target;
    if (auto p = target.find("://"); p != std::string::npos) {
        auto slash = target.find('/', p + 3);
        target = slash == std::string::npos ? "/" : target.substr(slash);
    }
    std::string base = baseUrl.empty()
                           ? (e.scheme.empty() ? std::string("http") : e.scheme) + "://" + e.authority
                           : std::string(baseUrl);
    while (!base.empty() && base.back() == '/')
        base.pop_back();
    std::string cmd = "curl";
    if (e.httpVersion == 20) cmd += e.scheme == "https" ? " --http2" : " --http2-prior-knowledge";
    if (!e.method.empty() && e.method != "GET") cmd += " -X " + quote(e.method);
    cmd += " " + quote(base + target);
    for (const auto& h : e.requestHeaders) {
        const std::string n = lower(h.name);
        if (n.empty() || n[0] == ':' || n == "content-length" || n == "connection" || n == "host") continue;
        cmd += " -H " + quote(h.name + ": " + h.value);
    }
    if (!e.requestBody.empty()) {
        bool printable = std::all_of(e.requestBody.begin(), e.requestBody.end(), [](char c) {
            auto u = static_cast<unsigned char>(c);
            return u >= 0x20 || c == '\n' || c == '\r' || c == '\t';
        });
        if (printable) {
            cmd += " --data-binary " + quote(e.requestBody);
        } else {
            std::string esc;
            char b[8];
            for (unsigned char c : e.requestBody) {
                std::snprintf(b, sizeof b, "\\%03o", c);
                esc += b;
            }
            cmd = "printf '" + esc + "' | " + cmd + " --data-binary @-";
        }
    }
    return cmd;
}

} // namespace portico::capture
