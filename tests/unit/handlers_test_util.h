// Helpers for the handler suites: hand-built requests, a one-vhost config, calling dispatch().
#pragma once

#include <portico/config/config.h>
#include <portico/handlers/dispatch.h>
#include <portico/http/message.h>
#include <portico/routing/router.h>

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QString>

#include <deque>
#include <string>
#include <string_view>
#include <unistd.h>
#include <utility>
#include <vector>

namespace portico::test {

/// A request whose views point into strings this object owns. Build it, then call `get()`.
class TestRequest {
public:
    explicit TestRequest(std::string path = "/", std::string method = "GET") {
        setPath(std::move(path));
        setMethod(std::move(method));
    }
    TestRequest& setMethod(std::string m) {
        method_ = std::move(m);
        return *this;
    }
    /// `target` may carry a query ("/a?x=1"); path and rawPath are the part before '?'.
    TestRequest& setPath(std::string target) {
        std::size_t q = target.find('?');
        path_ = target.substr(0, q);
        query_ = q == std::string::npos ? "" : target.substr(q + 1);
        rawPath_ = path_;
        target_ = target;
        return *this;
    }
    /// Sets the decoded path alone (it may contain '?' or '#' that were percent-encoded).
    TestRequest& setDecodedPath(std::string path) {
        path_ = std::move(path);
        return *this;
    }
    TestRequest& setRawPath(std::string raw) {
        rawPath_ = std::move(raw);
        return *this;
    }
    TestRequest& header(std::string name, std::string value) {
        store_.emplace_back(std::move(name), std::move(value));
        return *this;
    }
    TestRequest& setBody(std::string body) {
        body_ = std::move(body);
        return *this;
    }
    const http::Request& get() {
        headers_.clear();
        for (const auto& [n, v] : store_)
            headers_.push_back({n, v});
        req_ = http::Request{};
        req_.method = http::methodFromToken(method_);
        req_.methodToken = method_;
        req_.target = target_;
        req_.rawPath = rawPath_;
        req_.path = path_;
        req_.query = query_;
        req_.headers = headers_;
        req_.host = "localhost";
        req_.body = body_;
        req_.clientAddress = "127.0.0.1";
        return req_;
    }

private:
    std::string method_, target_, rawPath_, path_, query_, body_;
    std::deque<std::pair<std::string, std::string>> store_;
    std::vector<http::Header> headers_;
    http::Request req_;
};

/// One config with one vhost serving `root` (if not empty) from its static root.
struct Site {
    config::Config config;
    explicit Site(const QString& root = {}) {
        config.vhosts.emplace_back();
        if (!root.isEmpty()) {
            config::StaticAction s;
            s.root = root.toStdString();
            vhost().root = s;
        }
    }
    config::Vhost& vhost() { return config.vhosts.front(); }
    config::StaticAction& root() { return *vhost().root; }
};

inline routing::RouteResult fallbackResult() {
    routing::RouteResult r;
    r.kind = routing::RouteResult::Kind::Fallback;
    return r;
}

inline routing::RouteResult matched(const config::Route& route) {
    routing::RouteResult r;
    r.kind = routing::RouteResult::Kind::Matched;
    r.route = &route;
    return r;
}

/// Runs dispatch() for `req` on `result` into `res` (reset first).
inline void run(const config::Config& cfg, const routing::RouteResult& result, TestRequest& req,
                handlers::WorkerState& worker, http::Response& res, std::size_t vhost = 0) {
    res.reset();
    handlers::Exchange ex{cfg, cfg.vhosts[vhost], result, req.get(), worker};
    handlers::dispatch(ex, res);
}

/// Body bytes of `res`, reading file bodies from their descriptor.
inline std::string bodyOf(const http::Response& res) {
    if (res.bodyKind() != http::Response::BodyKind::File) return std::string(res.bodyView());
    std::string out(res.bodyLength(), '\0');
    std::size_t done = 0;
    while (done < out.size()) {
        ssize_t n = ::pread(res.file()->fd, out.data() + done, out.size() - done,
                            static_cast<off_t>(res.fileOffset() + done));
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    out.resize(done);
    return out;
}

/// How many field lines named `name` `res` carries.
inline int headerCount(const http::Response& res, std::string_view name) {
    int n = 0;
    std::string_view f = res.fieldBlock();
    std::size_t pos = 0;
    while (pos < f.size()) {
        std::size_t eol = f.find("\r\n", pos);
        std::size_t colon = f.find(':', pos);
        if (colon < eol && http::iequals(f.substr(pos, colon - pos), name)) ++n;
        pos = eol + 2;
    }
    return n;
}

inline QString hv(const http::Response& res, std::string_view name) {
    auto v = res.headerValue(name);
    return QString::fromUtf8(v.data(), static_cast<qsizetype>(v.size()));
}

/// Writes `bytes` to `dir/name`, creating parent folders.
inline bool writeFile(const QString& dir, const QString& name, const QByteArray& bytes) {
    QString path = dir + "/" + name;
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    return f.write(bytes) == bytes.size();
}

} // namespace portico::test
