// Static files: path confinement, index/listing/SPA fallback, conditional requests, byte ranges
// and content-coding selection (RFC 9110 §13, §14), served from the per-worker FileCache.
#include "handlers/actions.h"
#include "handlers/compress.h"
#include "handlers/file_cache.h"
#include "handlers/http_util.h"
#include "handlers/live_reload.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace portico::handlers {
namespace {

constexpr std::string_view kAllow = "GET, HEAD, OPTIONS";
// Range fields with more parts than this are answered with the whole file whatever
// limits.max_ranges says, so the parts fit in a fixed array.
constexpr std::size_t kHardMaxRanges = 64;

struct Ctx {
    const Exchange& ex;
    const config::StaticAction& action;
    http::Response& res;
    FileCache& cache;
    std::string_view rootPath; ///< action.root without a trailing slash
};

// Dot segments hide files such as .env, .git/config or .htpasswd that a project folder
// routinely holds. RFC 8615's /.well-known/ is the one public dot folder.
bool hasHiddenSegment(std::string_view path) {
    std::size_t i = 0;
    while (i < path.size()) {
        if (path[i] == '/') {
            ++i;
            continue;
        }
        std::size_t end = path.find('/', i);
        std::string_view seg = path.substr(i, end == std::string_view::npos ? end : end - i);
        if (seg.front() == '.' && seg != ".well-known") return true;
        if (end == std::string_view::npos) break;
        i = end;
    }
    return false;
}

bool insideRoot(std::string_view real, std::string_view root) {
    if (root == "/") return true;
    return real == root || (real.size() > root.size() && real.starts_with(root) && real[root.size()] == '/');
}

// Opens abs (which starts with ctx.rootPath) without leaving the real root unless the action
// follows symlinks. openat2(RESOLVE_BENEATH) refuses any escape atomically; it also refuses
// absolute symlinks that land inside the root, and older kernels lack it, so both cases fall back
// to opening normally and checking where the descriptor really points.
// O_PATH (a descriptor only to check where a name leads) takes no other open flags.
int openConfined(const Ctx& c, const PathBuf& abs, int flags) {
    flags |= (flags & O_PATH) ? O_CLOEXEC : O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    if (c.action.followSymlinks) return ::open(abs.c_str(), flags);
    const FileCache::Root* root = c.cache.root(c.rootPath.empty() ? std::string_view("/") : c.rootPath);
    if (!root) return -1;
    const char* rel = abs.c_str() + c.rootPath.size();
    while (*rel == '/')
        ++rel;
    if (*rel == '\0') rel = ".";
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int fd = static_cast<int>(::syscall(SYS_openat2, root->fd, rel, &how, sizeof how));
    if (fd >= 0) return fd;
    if (errno != EXDEV && errno != ENOSYS && errno != EPERM && errno != ELOOP) return -1;
    fd = ::open(abs.c_str(), flags);
    if (fd < 0) return -1;
    char link[64];
    char real[PATH_MAX];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = ::readlink(link, real, sizeof real - 1);
    if (n <= 0) {
        // No /proc: resolve the name instead (racy, but only reached without openat2 and /proc).
        if (!::realpath(abs.c_str(), real))
            n = -1;
        else
            n = static_cast<ssize_t>(std::strlen(real));
    }
    if (n <= 0 || !insideRoot(std::string_view(real, static_cast<std::size_t>(n)), root->real)) {
        ::close(fd);
        errno = EACCES;
        return -1;
    }
    return fd;
}

// Cache key: the absolute name plus the confinement rule and root it was validated under, so a
// root that follows symlinks never hands its entries to one that does not.
bool buildKey(const Ctx& c, const PathBuf& abs, PathBuf& key) {
    key.clear();
    char len[24];
    auto end = std::to_chars(len, len + sizeof len, c.rootPath.size()).ptr;
    key.append(abs.view());
    key.push('\0');
    key.push(c.action.followSymlinks ? 'F' : 'C');
    key.append(std::string_view(len, static_cast<std::size_t>(end - len)));
    return key.ok();
}

// The cache entry for the regular file `abs` that `st` describes, opening it confined on a miss.
std::shared_ptr<CachedFile> lookupFile(const Ctx& c, const PathBuf& abs, const struct stat& st) {
    PathBuf key;
    if (!buildKey(c, abs, key)) return nullptr;
    if (auto hit = c.cache.find(key.view(), st)) return hit;
    int fd = openConfined(c, abs, O_RDONLY);
    if (fd < 0) return nullptr;
    return c.cache.insert(key.view(), fd, abs.view());
}

/// The representation chosen for a response: identity bytes or one compressed variant.
struct Variant {
    std::shared_ptr<const void> owner; ///< keeps `bytes` alive (entry or encoded variant)
    std::string_view bytes;            ///< in-memory bytes, when not file-backed
    const CachedFile* file = nullptr;  ///< for file-backed bodies and ranged reads
    std::uint64_t size = 0;
    std::string_view etag;
    std::string_view lastModified;
    std::int64_t mtimeSec = 0;
    Coding coding = Coding::Identity;
};

Variant identityOf(const std::shared_ptr<CachedFile>& f) {
    Variant v;
    v.owner = f;
    v.file = f.get();
    if (f->inMemory) v.bytes = f->data;
    v.size = f->size;
    v.etag = f->etag;
    v.lastModified = f->lastModified;
    v.mtimeSec = f->mtimeSec;
    return v;
}

// A precompressed sibling ("app.js.br" next to "app.js"), served when present and confined.
bool siblingVariant(const Ctx& c, const PathBuf& abs, Coding coding, Variant& out) {
    PathBuf name;
    name.append(abs.view());
    name.append(coding == Coding::Brotli ? ".br" : ".gz");
    struct stat st {};
    if (!name.ok() || c.ex.worker.statFile(name.c_str(), name.size(), st) != 0 || !S_ISREG(st.st_mode))
        return false;
    auto f = lookupFile(c, name, st);
    if (!f || f->codedEtag.empty()) return false;
    out.owner = f;
    out.file = f.get();
    out.bytes = f->inMemory ? std::string_view(f->data) : std::string_view{};
    out.size = f->size;
    out.etag = f->codedEtag;
    out.lastModified = f->lastModified;
    out.mtimeSec = f->mtimeSec;
    out.coding = coding;
    return true;
}

enum class Precondition { Proceed, NotModified, Failed };

// RFC 9110 §13.2.2 order: If-Match, else If-Unmodified-Since (412 when false); then
// If-None-Match, else If-Modified-Since (304 when false for GET/HEAD). A present If-None-Match
// makes If-Modified-Since irrelevant (§13.1.3; case CND-01).
Precondition evaluatePreconditions(const http::Request& req, const Variant& v) {
    if (req.hasHeader("If-Match")) {
        if (!etagListMatches(req.header("If-Match"), v.etag, false)) return Precondition::Failed;
    } else if (req.hasHeader("If-Unmodified-Since")) {
        auto date = parseHttpDate(req.header("If-Unmodified-Since"));
        if (date && v.mtimeSec > *date) return Precondition::Failed;
    }
    if (req.hasHeader("If-None-Match")) {
        if (etagListMatches(req.header("If-None-Match"), v.etag, true)) return Precondition::NotModified;
    } else if (req.hasHeader("If-Modified-Since")) {
        auto date = parseHttpDate(req.header("If-Modified-Since"));
        if (date && v.mtimeSec <= *date) return Precondition::NotModified;
    }
    return Precondition::Proceed;
}

struct ByteRange {
    std::uint64_t first = 0;
    std::uint64_t last = 0; ///< inclusive
};

struct RangeSet {
    enum class Kind { Ignore, Unsatisfiable, Ranges } kind = Kind::Ignore;
    std::array<ByteRange, kHardMaxRanges> ranges{};
    std::size_t count = 0;
};

bool parseNumber(std::string_view s, std::uint64_t& out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc::result_out_of_range && p == s.data() + s.size()) {
        out = UINT64_MAX; // "bytes=99999999999999999999-" is merely unsatisfiable
        return true;
    }
    return ec == std::errc{} && p == s.data() + s.size();
}

// Range (RFC 9110 §14.1.1, §14.2). Syntax errors, unknown units and invalid specs (last < first)
// ignore the field (200); more than `cap` specs also give the whole file, as nginx's max_ranges.
RangeSet parseRange(std::string_view value, std::uint64_t size, std::size_t cap) {
    RangeSet out;
    value = trimOws(value);
    std::size_t eq = value.find('=');
    if (eq == std::string_view::npos || !http::iequals(trimOws(value.substr(0, eq)), "bytes")) return out;
    std::string_view specs = value.substr(eq + 1);
    std::size_t seen = 0;
    while (!specs.empty()) {
        std::size_t comma = specs.find(',');
        std::string_view spec = trimOws(specs.substr(0, comma));
        specs = comma == std::string_view::npos ? std::string_view{} : specs.substr(comma + 1);
        if (spec.empty()) continue; // #rule allows empty list elements
        if (++seen > cap) return RangeSet{};
        std::size_t dash = spec.find('-');
        if (dash == std::string_view::npos) return RangeSet{};
        ByteRange r;
        if (dash == 0) {
            std::uint64_t suffix = 0;
            if (!parseNumber(spec.substr(1), suffix)) return RangeSet{};
            if (suffix == 0 || size == 0) continue; // unsatisfiable part
            r.first = suffix >= size ? 0 : size - suffix;
            r.last = size - 1;
        } else {
            std::uint64_t first = 0, last = UINT64_MAX;
            if (!parseNumber(spec.substr(0, dash), first)) return RangeSet{};
            std::string_view lastText = spec.substr(dash + 1);
            if (!lastText.empty() && !parseNumber(lastText, last)) return RangeSet{};
            if (last < first) return RangeSet{}; // invalid range-spec: ignore the field
            if (first >= size) continue;         // unsatisfiable part
            r.first = first;
            r.last = std::min(last, size - 1);
        }
        out.ranges[out.count++] = r;
    }
    if (seen == 0) return RangeSet{};
    out.kind = out.count == 0 ? RangeSet::Kind::Unsatisfiable : RangeSet::Kind::Ranges;
    return out;
}

// If-Range (RFC 9110 §13.1.5): an entity-tag must match strongly, a date must equal Last-Modified.
bool ifRangeHolds(const http::Request& req, const Variant& v) {
    if (!req.hasHeader("If-Range")) return true;
    std::string_view value = trimOws(req.header("If-Range"));
    if (value.starts_with("W/")) return false;
    if (value.starts_with("\"")) return value == v.etag;
    auto date = parseHttpDate(value);
    return date && *date == v.mtimeSec;
}

// "bytes FIRST-LAST/SIZE" (or "bytes */SIZE" when first > last) into buf.
std::string_view contentRange(char* buf, std::size_t cap, const ByteRange* r, std::uint64_t size) {
    char* p = buf;
    char* end = buf + cap;
    std::memcpy(p, "bytes ", 6);
    p += 6;
    if (r) {
        p = std::to_chars(p, end, r->first).ptr;
        *p++ = '-';
        p = std::to_chars(p, end, r->last).ptr;
    } else {
        *p++ = '*';
    }
    *p++ = '/';
    p = std::to_chars(p, end, size).ptr;
    return {buf, static_cast<std::size_t>(p - buf)};
}

void setWholeBody(const Variant& v, http::Response& res) {
    if (v.file && !v.file->inMemory && v.bytes.empty() && v.size > 0)
        res.setFileBody(v.file->handle, 0, v.size);
    else if (v.size > 0)
        res.setSharedBody(v.owner, v.bytes);
}

Produced serveRanges(const Ctx& c, const Variant& v, const RangeSet& set) {
    http::Response& res = c.res;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < set.count; ++i)
        total += set.ranges[i].last - set.ranges[i].first + 1;
    // Overlapping parts that add up to more than the file are an amplification attempt
    // (RFC 9110 §14.2 lets a server ignore such a field): send the file once instead.
    if (total > v.size) {
        setWholeBody(v, res);
        return Produced::Response;
    }
    char buf[96];
    res.status = 206;
    if (set.count == 1) {
        const ByteRange& r = set.ranges[0];
        res.addHeader("Content-Range", contentRange(buf, sizeof buf, &r, v.size));
        if (!v.bytes.empty() || v.file->inMemory)
            res.setSharedBody(v.owner, v.bytes.substr(r.first, r.last - r.first + 1));
        else
            res.setFileBody(v.file->handle, r.first, r.last - r.first + 1);
        return Produced::Response;
    }
    // multipart/byteranges (RFC 9110 §14.6): a random boundary cannot plausibly occur in the file.
    char boundary[32] = "portico-";
    std::uint64_t rnd = static_cast<std::uint64_t>(c.ex.worker.random() * 18446744073709551615.0);
    char* be = std::to_chars(boundary + 8, boundary + sizeof boundary, rnd | (1ull << 63), 16).ptr;
    std::string_view b(boundary, static_cast<std::size_t>(be - boundary));
    std::string_view type = v.file->mime.type;
    std::string& body = res.ownedBody();
    for (std::size_t i = 0; i < set.count; ++i) {
        const ByteRange& r = set.ranges[i];
        body.append(i == 0 ? "--" : "\r\n--");
        body.append(b);
        body.append("\r\nContent-Type: ");
        body.append(type);
        body.append("\r\nContent-Range: ");
        body.append(contentRange(buf, sizeof buf, &r, v.size));
        body.append("\r\n\r\n");
        if (!v.file->read(r.first, r.last - r.first + 1, body)) return fail(500, res);
    }
    body.append("\r\n--");
    body.append(b);
    body.append("--\r\n");
    std::string_view ct = "multipart/byteranges; boundary=";
    char ctBuf[96];
    std::memcpy(ctBuf, ct.data(), ct.size());
    std::memcpy(ctBuf + ct.size(), b.data(), b.size());
    res.setHeader("Content-Type", std::string_view(ctBuf, ct.size() + b.size()));
    return Produced::Response;
}

Produced serveFile(const Ctx& c, const PathBuf& abs, const struct stat& st) {
    auto file = lookupFile(c, abs, st);
    if (!file) return fail(404, c.res); // vanished, unreadable, or outside the root
    const http::Request& req = c.ex.request;
    http::Response& res = c.res;
    // Live reload: HTML is served with the script injected, as a representation of its own (own
    // bytes, length and ETag, compressed from those bytes; precompressed siblings don't apply).
    bool injected = false;
    if (c.ex.vhost.liveReload && file->mime.type.starts_with("text/html")) {
        if (auto lr = c.cache.transformed(*file, injectLiveReload, "lr")) {
            file = std::move(lr);
            injected = true;
        }
    }
    Variant v = identityOf(file);
    bool ranged = req.hasHeader("Range");
    bool vary = file->mime.compressible;
    // With a Range field we always answer in identity: ranges of a compressed variant would
    // depend on the compressor and break resumed downloads.
    if (vary && !ranged) {
        AcceptedCodings accepted = acceptedCodings(req.header("Accept-Encoding"));
        const config::Compression& z = c.ex.config.compression;
        for (std::size_t i = 0; i < accepted.count; ++i) {
            Coding coding = accepted.order[i];
            if (!injected && siblingVariant(c, abs, coding, v)) break;
            if (!z.enabled || file->size < z.minBytes) continue;
            if (auto enc = c.cache.encoded(*file, coding, z)) {
                v.bytes = enc->bytes;
                v.owner = std::move(enc);
                v.file = nullptr;
                v.size = v.bytes.size();
                v.etag = static_cast<const EncodedFile*>(v.owner.get())->etag;
                v.coding = coding;
                break;
            }
        }
    }

    switch (evaluatePreconditions(req, v)) {
    case Precondition::Failed:
        return fail(412, res);
    case Precondition::NotModified:
        // §15.4.5: the fields a 200 would carry that describe the representation's validators.
        res.status = 304;
        res.addHeader("ETag", v.etag);
        res.addHeader("Last-Modified", v.lastModified);
        if (vary) res.addHeader("Vary", "Accept-Encoding");
        return Produced::Response;
    case Precondition::Proceed:
        break;
    }

    res.addHeader("Content-Type", file->mime.type);
    if (!file->mime.known) res.addHeader("X-Content-Type-Options", "nosniff");
    if (v.coding != Coding::Identity) res.addHeader("Content-Encoding", codingToken(v.coding));
    res.addHeader("ETag", v.etag);
    res.addHeader("Last-Modified", v.lastModified);
    res.addHeader("Accept-Ranges", "bytes");
    if (vary) res.addHeader("Vary", "Accept-Encoding");

    if (ranged && v.coding == Coding::Identity && ifRangeHolds(req, v)) {
        std::size_t cap =
            static_cast<std::size_t>(std::min<std::uint64_t>(c.ex.config.limits.maxRanges, kHardMaxRanges));
        RangeSet set = parseRange(req.header("Range"), v.size, cap);
        if (set.kind == RangeSet::Kind::Unsatisfiable) {
            char buf[64];
            errorResponse(416, res);
            res.addHeader("Content-Range", contentRange(buf, sizeof buf, nullptr, v.size));
            return Produced::GeneratedError;
        }
        if (set.kind == RangeSet::Kind::Ranges) return serveRanges(c, v, set);
    }
    setWholeBody(v, res);
    return Produced::Response;
}

// Percent-encodes a file name for an href: everything but unreserved characters.
void appendHrefSegment(std::string& out, std::string_view name) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (unsigned char ch : name) {
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                     ch == '-' || ch == '.' || ch == '_' || ch == '~';
        if (plain) {
            out += static_cast<char>(ch);
        } else {
            out += '%';
            out += kHex[ch >> 4];
            out += kHex[ch & 15];
        }
    }
}

// HTML index of a directory: directories first, then files, each group sorted by name (bytewise);
// hidden names are left out like the files they name are.
Produced listDirectory(const Ctx& c, const PathBuf& abs, std::string_view urlPath) {
    int fd = openConfined(c, abs, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return fail(404, c.res);
    DIR* dir = ::fdopendir(fd);
    if (!dir) {
        ::close(fd);
        return fail(500, c.res);
    }
    std::vector<std::pair<bool, std::string>> items; // (is a file, name): false sorts first
    PathBuf entry;
    entry.append(abs.view());
    if (!entry.view().ends_with('/')) entry.push('/');
    std::size_t dirLen = entry.size();
    while (dirent* e = ::readdir(dir)) {
        std::string_view name = e->d_name;
        if (name.empty() || name.front() == '.') continue;
        unsigned char type = e->d_type;
        struct stat st {};
        if (type == DT_UNKNOWN) {
            if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            type = S_ISLNK(st.st_mode)   ? DT_LNK
                   : S_ISDIR(st.st_mode) ? DT_DIR
                   : S_ISREG(st.st_mode) ? DT_REG
                                         : 0;
        }
        if (type == DT_LNK) {
            // List a symlink only if it would be served: it must resolve (no dangling links)
            // and, unless the action follows symlinks, stay inside the root.
            if (c.action.followSymlinks) {
                if (::fstatat(::dirfd(dir), e->d_name, &st, 0) != 0) continue;
            } else {
                entry.truncate(dirLen);
                entry.append(name);
                if (!entry.ok()) continue;
                int fd = openConfined(c, entry, O_PATH);
                if (fd < 0) continue;
                bool ok = ::fstat(fd, &st) == 0;
                ::close(fd);
                if (!ok) continue;
            }
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : 0;
        }
        // FIFOs, sockets and devices answer 404, so they are not listed either.
        if (type != DT_DIR && type != DT_REG) continue;
        items.emplace_back(type != DT_DIR, std::string(name));
    }
    ::closedir(dir);
    std::sort(items.begin(), items.end());
    std::string& body = c.res.ownedBody();
    body += "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Index of ";
    appendHtmlEscaped(body, urlPath);
    body += "</title>\n<h1>Index of ";
    appendHtmlEscaped(body, urlPath);
    body += "</h1>\n<ul>\n";
    if (urlPath != "/") body += "<li><a href=\"../\">../</a></li>\n";
    for (const auto& [isFile, name] : items) {
        body += "<li><a href=\"";
        appendHrefSegment(body, name);
        if (!isFile) body += '/';
        body += "\">";
        appendHtmlEscaped(body, name);
        if (!isFile) body += '/';
        body += "</a></li>\n";
    }
    body += "</ul>\n";
    if (c.ex.vhost.liveReload) body += liveReloadSnippet();
    c.res.addHeader("Content-Type", "text/html; charset=utf-8");
    return Produced::Response;
}

// Appends the decoded path `path` percent-encoded for a Location: every byte but RFC 3986
// unreserved characters, sub-delims, ':', '@' and '/' (so space, '%', '?', '#', backslash and
// non-ASCII bytes are encoded). Repeated slashes are collapsed and a leading one is ensured, so
// the result is always an absolute path, never a network-path reference ("//host") or a URI
// with a scheme.
void appendLocationPath(PathBuf& out, std::string_view path) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    static constexpr std::string_view kKeep = "-._~!$&'()*+,;=:@/";
    out.push('/');
    for (unsigned char ch : path) {
        if (ch == '/' && out.view().ends_with('/')) continue;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                     kKeep.find(static_cast<char>(ch)) != std::string_view::npos;
        if (plain) {
            out.push(static_cast<char>(ch));
        } else {
            char esc[3] = {'%', kHex[ch >> 4], kHex[ch & 15]};
            out.append(std::string_view(esc, 3));
        }
    }
}

// 301 to the directory with a slash, keeping the query. The target is rebuilt from the decoded,
// normalised path, never copied from the raw one: "///evil.example/..//images" must not become
// "Location: ///evil.example/..//images/", which browsers follow to another host
// (serve-static's CVE-2015-1164).
Produced redirectToDirectory(const Ctx& c) {
    const http::Request& req = c.ex.request;
    PathBuf loc;
    appendLocationPath(loc, req.path);
    if (!loc.view().ends_with('/')) loc.push('/');
    if (!req.query.empty()) {
        loc.push('?');
        loc.append(req.query);
    }
    if (!loc.ok()) return fail(404, c.res);
    c.res.status = 301;
    c.res.addHeader("Location", loc.view());
    c.res.addHeader("Content-Type", "text/plain; charset=utf-8");
    std::string& body = c.res.ownedBody();
    body.append("301 Moved Permanently: ");
    body.append(loc.view());
    body.push_back('\n');
    return Produced::Response;
}

// Serves the SPA fallback file with 200, or 404 when there is none.
Produced notFound(const Ctx& c) {
    const std::string& fallback = c.action.spaFallback;
    if (fallback.empty()) return fail(404, c.res);
    PathBuf abs;
    abs.append(c.rootPath);
    if (fallback.front() != '/') abs.push('/');
    abs.append(fallback);
    struct stat st {};
    if (!abs.ok() || c.ex.worker.statFile(abs.c_str(), abs.size(), st) != 0 || !S_ISREG(st.st_mode))
        return fail(404, c.res);
    return serveFile(c, abs, st);
}

} // namespace

Produced serveStatic(const Exchange& ex, const config::StaticAction& action, std::string_view path,
                     http::Response& res) {
    // The connection already turns NUL into 400; a second check costs nothing and keeps a
    // truncated C string from ever reaching open().
    // "" names the root itself requested without its slash (a wildcard route "/files/*" reached
    // by "/files"): it gets the directory redirect like any other folder.
    if (path.find('\0') != std::string_view::npos || (!path.empty() && path.front() != '/'))
        return fail(400, res);
    http::Method m = ex.request.method;
    if (m == http::Method::Options) {
        res.status = 204;
        res.addHeader("Allow", kAllow);
        return Produced::Response;
    }
    if (m != http::Method::Get && m != http::Method::Head) {
        errorResponse(405, res);
        res.addHeader("Allow", kAllow);
        return Produced::GeneratedError;
    }
    std::string_view root = action.root;
    while (root.size() > 1 && root.back() == '/')
        root.remove_suffix(1);
    if (root == "/") root = "";
    Ctx c{ex, action, res, ex.worker.files(), root};
    if (hasHiddenSegment(path)) return fail(404, res);

    PathBuf abs;
    abs.append(root);
    abs.append(path);
    struct stat st {};
    if (!abs.ok() || ex.worker.statFile(abs.c_str(), abs.size(), st) != 0) return notFound(c);
    bool slash = path.ends_with('/');
    if (S_ISREG(st.st_mode)) {
        if (slash || path.empty()) return notFound(c); // "/a.txt/" names no file
        return serveFile(c, abs, st);
    }
    if (!S_ISDIR(st.st_mode)) return fail(404, res); // FIFOs, sockets and devices are never served

    // A directory must really be inside the root before we even reveal that it exists.
    int dfd = openConfined(c, abs, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) return fail(404, res);
    ::close(dfd);
    if (!slash) return redirectToDirectory(c);
    std::size_t dirLen = abs.size();
    for (const std::string& index : action.index) {
        abs.truncate(dirLen);
        abs.append(index);
        struct stat ist {};
        if (abs.ok() && ex.worker.statFile(abs.c_str(), abs.size(), ist) == 0 && S_ISREG(ist.st_mode))
            return serveFile(c, abs, ist);
    }
    abs.truncate(dirLen);
    if (action.listing) return listDirectory(c, abs, ex.request.path);
    return notFound(c);
}

} // namespace portico::handlers
