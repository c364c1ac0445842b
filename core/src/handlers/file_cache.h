// Per-worker cache of static files: validators, ready-made header values, small files' bytes and
// their compressed variants, plus the open root directories used for confined opens.
#pragma once

#include "handlers/compress.h"

#include <portico/config/config.h>
#include <portico/handlers/mime.h>
#include <portico/http/message.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unordered_map>

namespace portico::handlers {

/// A compressed copy of a cached file. `bytes` is empty when compressing did not make it smaller.
struct EncodedFile {
    std::string bytes;
    std::string etag; ///< the file's ETag with "-br" / "-gz" inside the quotes
    int level = 0;    ///< gzip level or Brotli quality it was made with
};

/// One version of one file (identified by device, inode, size and mtime).
struct CachedFile {
    dev_t dev = 0;
    ino_t ino = 0;
    std::uint64_t size = 0;   ///< bytes
    std::int64_t mtimeNs = 0; ///< st_mtim in nanoseconds since the epoch
    std::int64_t mtimeSec = 0;
    bool inMemory = false; ///< `data` holds the whole file (size <= FileCache::kMaxInMemoryBytes)
    std::string data;
    std::shared_ptr<const http::FileHandle> handle; ///< open file for larger ones (sendfile)
    MimeInfo mime;
    std::string etag;         ///< strong: "\"<hex size>-<hex mtime ns>\""
    std::string codedEtag;    ///< when served as x's precompressed sibling (x.br / x.gz): etag + "-br"/"-gz"
    std::string lastModified; ///< IMF-fixdate of mtimeSec
    std::shared_ptr<EncodedFile> br, gz; ///< lazily made on-the-fly variants
    std::uint64_t accounted = 0;         ///< bytes charged to the cache budget
    /// The file with its content transformed (live-reload script injected into HTML), made on first
    /// use; `parent` points back from such a variant to the entry that owns it (and its budget).
    std::shared_ptr<CachedFile> transformed;
    CachedFile* parent = nullptr;

    /// Reads `length` bytes from `offset` into `out` (appending), from memory or the open file.
    bool read(std::uint64_t offset, std::uint64_t length, std::string& out) const;
};

/// The worker's file cache. Entries are looked up by a caller-built key (absolute path plus the
/// confinement rule) and revalidated against a fresh stat on every request: a changed device,
/// inode, size or mtime drops the entry. Eviction is arbitrary once the memory budget or the
/// open-file cap is exceeded: good enough for a development server. Not thread-safe.
class FileCache {
public:
    static constexpr std::uint64_t kMaxInMemoryBytes = 256 * 1024; ///< larger files are sent with sendfile
    /// Largest body compressed on the fly. Compression runs synchronously on the worker's event
    /// loop, so every other request on that worker waits for it (an 8 MiB script at Brotli 11 took
    /// 14 s, 2.3 s at quality 5). Larger files are sent identity unless a precompressed .br / .gz
    /// sibling exists, which is what big assets should ship with anyway.
    static constexpr std::uint64_t kMaxCompressBytes = 1024 * 1024;
    /// Above this size the on-the-fly Brotli quality is capped at kMaxLargeBrotliQuality:
    /// qualities 10 and 11 cost seconds per MiB, 9 costs tens of milliseconds.
    static constexpr std::uint64_t kLargeBrotliBytes = 256 * 1024;
    static constexpr int kMaxLargeBrotliQuality = 9;
    static constexpr std::uint64_t kBudgetBytes = 64 * 1024 * 1024; ///< data + compressed variants
    static constexpr std::size_t kMaxOpenFiles = 64;                ///< entries holding a descriptor

    /// An open static root: an O_PATH descriptor (for openat2 RESOLVE_BENEATH) and its real path.
    struct Root {
        int fd = -1;
        std::string real;
        dev_t dev = 0;
        ino_t ino = 0;
    };

    FileCache();
    ~FileCache();
    FileCache(const FileCache&) = delete;
    FileCache& operator=(const FileCache&) = delete;

    /// The entry stored under `key` if it still describes `st`; null otherwise. Never allocates.
    std::shared_ptr<CachedFile> find(std::string_view key, const struct stat& st);

    /// Builds an entry from the open descriptor `fd` (owned from here on) for the file named `name`
    /// (its extension picks the MIME type) and stores it under `key`. Null on a read error.
    std::shared_ptr<CachedFile> insert(std::string_view key, int fd, std::string_view name);

    /// The `coding` variant of `file`, compressed and remembered on first use with `settings`'
    /// level (Brotli capped at kMaxLargeBrotliQuality above kLargeBrotliBytes); null when the file
    /// is larger than kMaxCompressBytes or compression would not shrink it.
    std::shared_ptr<const EncodedFile> encoded(CachedFile& file, Coding coding,
                                               const config::Compression& settings);

    /// Largest file transform() accepts.
    static constexpr std::uint64_t kMaxTransformBytes = 8 * 1024 * 1024;

    /// `file` with its bytes passed through `transform` (in memory; ETag = file's + `etagSuffix`
    /// inside the quotes), made on first use and kept with the entry. The transform must always
    /// give the same output for the same input. Null for files over kMaxTransformBytes or unreadable.
    std::shared_ptr<CachedFile> transformed(CachedFile& file,
                                            const std::function<std::string(std::string_view)>& transform,
                                            std::string_view etagSuffix);

    /// The root directory `path`, opened on first use and reopened when the directory at `path`
    /// was replaced (build tools delete and recreate output folders). Null if it cannot be opened.
    const Root* root(std::string_view path);

    /// The whole content of the file at absolute `path` (respond body files, error pages), read on
    /// first use and re-read when it changes. Null if it cannot be read.
    std::shared_ptr<const CachedFile> loadWhole(std::string_view path);

    /// Bytes currently charged to the budget (for tests).
    std::uint64_t bytesCached() const { return total_; }

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    template <class V> using Map = std::unordered_map<std::string, V, Hash, std::equal_to<>>;

    void charge(CachedFile& file, std::uint64_t bytes);
    void evict(std::string_view keep);

    Map<std::shared_ptr<CachedFile>> entries_;
    Map<std::shared_ptr<CachedFile>> whole_;
    Map<Root> roots_;
    std::uint64_t total_ = 0;
    std::size_t openFiles_ = 0;
};

} // namespace portico::handlers
