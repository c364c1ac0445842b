// The per-worker static file cache: stat-validated entries, lazily compressed variants, open roots.
#include "handlers/file_cache.h"

#include "handlers/http_util.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace portico::handlers {
namespace {

std::int64_t mtimeNsOf(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

bool sameVersion(const CachedFile& f, const struct stat& st) {
    return f.dev == st.st_dev && f.ino == st.st_ino && f.size == static_cast<std::uint64_t>(st.st_size) &&
           f.mtimeNs == mtimeNsOf(st);
}

bool preadAll(int fd, std::uint64_t offset, std::uint64_t length, char* out) {
    while (length > 0) {
        ssize_t n = ::pread(fd, out, length, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false; // error, or the file shrank under us
        out += n;
        offset += static_cast<std::uint64_t>(n);
        length -= static_cast<std::uint64_t>(n);
    }
    return true;
}

// ETag with a coding suffix inside the quotes: "\"a-b\"" → "\"a-b-br\"".
std::string withSuffix(std::string_view etag, std::string_view suffix) {
    std::string out(etag.substr(0, etag.size() - 1));
    out += '-';
    out += suffix;
    out += '"';
    return out;
}

std::string_view suffixFor(Coding c) { return c == Coding::Brotli ? "br" : "gz"; }

// Fills every field but the bytes from an fstat of `fd`.
std::shared_ptr<CachedFile> describe(int fd, std::string_view name) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    auto f = std::make_shared<CachedFile>();
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->size = static_cast<std::uint64_t>(st.st_size);
    f->mtimeNs = mtimeNsOf(st);
    f->mtimeSec = st.st_mtim.tv_sec;
    char buf[64];
    char* p = buf;
    *p++ = '"';
    p = std::to_chars(p, buf + sizeof buf, f->size, 16).ptr;
    *p++ = '-';
    p = std::to_chars(p, buf + sizeof buf, static_cast<std::uint64_t>(f->mtimeNs), 16).ptr;
    *p++ = '"';
    f->etag.assign(buf, p);
    char date[32];
    f->lastModified = std::string(formatHttpDate(f->mtimeSec, date));
    // Any x.br / x.gz may stand in for x as a precompressed sibling; it is then sent with x's
    // Content-Type and this ETag. Requested by its own name it is typed by its own extension.
    if (name.ends_with(".br"))
        f->codedEtag = withSuffix(f->etag, "br");
    else if (name.ends_with(".gz"))
        f->codedEtag = withSuffix(f->etag, "gz");
    f->mime = mimeFor(name);
    return f;
}

} // namespace

bool CachedFile::read(std::uint64_t offset, std::uint64_t length, std::string& out) const {
    if (offset > size || length > size - offset) return false;
    if (inMemory) {
        out.append(data, offset, length);
        return true;
    }
    if (!handle) return false;
    std::size_t at = out.size();
    out.resize(at + length);
    if (preadAll(handle->fd, offset, length, out.data() + at)) return true;
    out.resize(at);
    return false;
}

FileCache::FileCache() = default;

FileCache::~FileCache() {
    for (auto& [path, r] : roots_)
        if (r.fd >= 0) ::close(r.fd);
}

std::shared_ptr<CachedFile> FileCache::find(std::string_view key, const struct stat& st) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    if (sameVersion(*it->second, st)) return it->second;
    // Stale: forget it now so its memory and descriptor go as soon as in-flight responses finish.
    total_ -= it->second->accounted;
    if (it->second->handle) --openFiles_;
    entries_.erase(it);
    return nullptr;
}

std::shared_ptr<CachedFile> FileCache::insert(std::string_view key, int fd, std::string_view name) {
    auto f = describe(fd, name);
    if (!f) {
        ::close(fd);
        return nullptr;
    }
    if (f->size <= kMaxInMemoryBytes) {
        f->data.resize(f->size);
        bool ok = preadAll(fd, 0, f->size, f->data.data());
        ::close(fd);
        if (!ok) return nullptr;
        f->inMemory = true;
    } else {
        f->handle = std::make_shared<const http::FileHandle>(fd);
    }
    auto [it, inserted] = entries_.insert_or_assign(std::string(key), f);
    if (f->handle) ++openFiles_;
    charge(*f, f->data.size() + key.size() + 256);
    evict(it->first);
    return f;
}

void FileCache::charge(CachedFile& file, std::uint64_t bytes) {
    // A derived variant (live reload) is accounted to the entry it hangs off, which is what evicts it.
    (file.parent ? *file.parent : file).accounted += bytes;
    total_ += bytes;
}

std::shared_ptr<CachedFile>
FileCache::transformed(CachedFile& file, const std::function<std::string(std::string_view)>& transform,
                       std::string_view etagSuffix) {
    if (file.transformed) return file.transformed;
    if (file.size > kMaxTransformBytes) return nullptr;
    std::string whole;
    std::string_view source = file.data;
    if (!file.inMemory) {
        if (!file.read(0, file.size, whole)) return nullptr;
        source = whole;
    }
    auto v = std::make_shared<CachedFile>();
    v->dev = file.dev;
    v->ino = file.ino;
    v->mtimeNs = file.mtimeNs;
    v->mtimeSec = file.mtimeSec;
    v->mime = file.mime;
    v->lastModified = file.lastModified;
    v->etag = withSuffix(file.etag, etagSuffix);
    v->data = transform(source);
    v->size = v->data.size();
    v->inMemory = true;
    v->parent = &file;
    file.transformed = v;
    charge(file, v->data.size());
    return v;
}

void FileCache::evict(std::string_view keep) {
    // Arbitrary victims: responses in flight keep their entries alive through shared_ptr owners.
    for (auto it = entries_.begin();
         it != entries_.end() && (total_ > kBudgetBytes || openFiles_ > kMaxOpenFiles);) {
        if (it->first == keep) {
            ++it;
            continue;
        }
        total_ -= it->second->accounted;
        if (it->second->handle) --openFiles_;
        it = entries_.erase(it);
    }
    for (auto it = whole_.begin(); it != whole_.end() && total_ > kBudgetBytes;) {
        if (it->first == keep) {
            ++it;
            continue;
        }
        total_ -= it->second->accounted;
        it = whole_.erase(it);
    }
}

std::shared_ptr<const EncodedFile> FileCache::encoded(CachedFile& file, Coding coding,
                                                      const config::Compression& settings) {
    if (coding == Coding::Identity || file.size > kMaxCompressBytes) return nullptr;
    std::shared_ptr<EncodedFile>& slot = coding == Coding::Brotli ? file.br : file.gz;
    int level = coding == Coding::Brotli ? settings.brotliQuality : settings.gzipLevel;
    if (coding == Coding::Brotli && file.size > kLargeBrotliBytes)
        level = std::min(level, kMaxLargeBrotliQuality);
    if (slot && slot->level == level) return slot->bytes.empty() ? nullptr : slot;
    std::string whole;
    std::string_view source = file.data;
    if (!file.inMemory) {
        if (!file.read(0, file.size, whole)) return nullptr;
        source = whole;
    }
    auto enc = std::make_shared<EncodedFile>();
    enc->level = level;
    bool ok = coding == Coding::Brotli ? brotliCompress(source, level, enc->bytes)
                                       : gzipCompress(source, level, enc->bytes);
    if (!ok || enc->bytes.size() >= source.size()) {
        enc->bytes.clear(); // remember "not worth it" so we do not retry on every request
        enc->bytes.shrink_to_fit();
    } else {
        enc->etag = withSuffix(file.etag, suffixFor(coding));
    }
    if (slot) {
        (file.parent ? *file.parent : file).accounted -= slot->bytes.size();
        total_ -= slot->bytes.size();
    }
    slot = enc;
    charge(file, enc->bytes.size());
    evict({});
    return enc->bytes.empty() ? nullptr : enc;
}

const FileCache::Root* FileCache::root(std::string_view path) {
    // Called for every directory request and cache miss, so the common case stays allocation-free.
    PathBuf name;
    struct stat st {};
    if (!name.append(path) || ::stat(name.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return nullptr;
    auto it = roots_.find(path);
    if (it != roots_.end()) {
        if (it->second.dev == st.st_dev && it->second.ino == st.st_ino) return &it->second;
        ::close(it->second.fd);
        roots_.erase(it);
    }
    Root r;
    r.fd = ::open(name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (r.fd < 0) return nullptr;
    char real[PATH_MAX];
    if (!::realpath(name.c_str(), real)) {
        ::close(r.fd);
        return nullptr;
    }
    r.real = real;
    struct stat fst {};
    ::fstat(r.fd, &fst);
    r.dev = fst.st_dev;
    r.ino = fst.st_ino;
    return &roots_.insert_or_assign(std::string(path), std::move(r)).first->second;
}

std::shared_ptr<const CachedFile> FileCache::loadWhole(std::string_view path) {
    PathBuf name;
    if (!name.append(path)) return nullptr;
    struct stat st {};
    if (::stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    auto it = whole_.find(path);
    if (it != whole_.end()) {
        if (sameVersion(*it->second, st)) return it->second;
        total_ -= it->second->accounted;
        whole_.erase(it);
    }
    int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    auto f = describe(fd, path);
    bool ok = f != nullptr;
    if (ok) {
        f->data.resize(f->size);
        ok = preadAll(fd, 0, f->size, f->data.data());
        f->inMemory = true;
    }
    ::close(fd);
    if (!ok) return nullptr;
    auto [pos, inserted] = whole_.insert_or_assign(std::string(path), f);
    charge(*f, f->data.size() + path.size() + 256);
    evict(pos->first);
    return f;
}

} // namespace portico::handlers
