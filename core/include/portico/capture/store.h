// A capture session file: SQLite 3 in WAL mode, one row per exchange (table `exchanges`, schema
// in store.cpp and docs/capture.md). Written by the engine's collector in transactions committed
// at most every 250 ms, so killing the process loses at most the last ~second and never corrupts
// the file (SQLite's WAL recovery).
#pragma once

#include <portico/capture/exchange.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace portico::capture {

class Store {
public:
    /// Opens or creates `path` (WAL, synchronous=NORMAL) and its schema. Null with `error` set
    /// ("FILE: unable to open database file", "FILE: not a Portico session file") on failure.
    static std::unique_ptr<Store> open(const std::string& path, std::string& error);
    /// Opens an existing session file for reading only, beside its writer (WAL lets a reader and
    /// the writer work at once; the reader sees what the writer has committed). Null with `error`
    /// set on failure.
    static std::unique_ptr<Store> openReadOnly(const std::string& path, std::string& error);
    /// Another connection to an existing session file that only runs checkpoints (below); null
    /// with `error` set on failure.
    static std::unique_ptr<Store> openForCheckpoints(const std::string& path, std::string& error);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    /// Inserts `records` (their ids kept; id 0: the next free id is assigned and written back) in
    /// the current transaction. False with `error()` on failure.
    bool append(std::vector<Exchange>& records);
    /// Rewrites an existing record (same id), e.g. when its completion arrived.
    bool update(const Exchange& e);
    /// Sets a session property (table `portico_session`), e.g. "dropped_records", in the current transaction.
    bool setMeta(const std::string& key, const std::string& value);
    /// A session property; "" when absent.
    std::string meta(const std::string& key);
    /// Commits the current transaction (a new one starts on the next write).
    bool commit();

    /// A passive WAL checkpoint (committed pages copied from the -wal file into the file itself,
    /// https://sqlite.org/wal.html#ckpt): copies what no reader still needs and never waits on
    /// the writer or the readers. The writer also checkpoints inside the commit that takes the WAL
    /// past 1,000 pages (and only there can the WAL start over, which bounds its size); a
    /// connection from openForCheckpoints calling this from its own thread leaves that commit
    /// little to copy, so the writer's thread no longer stalls on it. False with `error()` on failure.
    bool checkpoint();

    /// Records with id > `sinceId`, in id order, at most `max`. `withBodies` false leaves the
    /// bodies (the originals before rules too) and messages empty (their sizes stay): what a table
    /// row and the filter read.
    std::vector<Exchange> load(std::uint64_t sinceId = 0, std::size_t max = ~std::size_t{0},
                               bool withBodies = true);
    /// The record `id`; nullopt when it is not in the file.
    std::optional<Exchange> get(std::uint64_t id);
    std::uint64_t count();
    std::uint64_t maxId();
    std::uint64_t minId(); ///< 0 when empty
    /// Bytes the records occupy in the file: (page_count − freelist_count) × page_size.
    std::uint64_t usedBytes();
    /// Oldest-first eviction: when usedBytes() exceeds `maxBytes` (> 0), deletes the oldest
    /// records until about 90 % of it is used (the freed pages are reused by later inserts, so the
    /// file stops growing). Returns how many records were deleted; commits.
    std::uint64_t evict(std::uint64_t maxBytes);
    /// A consistent copy of the whole file at `to` (SQLite's VACUUM INTO; the target must not
    /// exist). False with error() on failure.
    bool copyTo(const std::string& to);
    const std::string& path() const { return path_; }
    /// PRAGMA integrity_check: "ok" or SQLite's report.
    std::string integrityCheck();
    const std::string& error() const { return error_; }

private:
    /// A connection to `path` opened with `flags` (SQLITE_OPEN_NOMUTEX added), SQLite's busy
    /// timeout set and `pragma` (when not null) run; null with `error` ("FILE: why") on failure.
    static std::unique_ptr<Store> connect(const std::string& path, int flags, const char* pragma,
                                          std::string& error);
    Store() = default;
    bool exec(const char* sql);
    bool begin();
    bool migrate();
    /// Binds `e`'s columns without copying them (SQLITE_STATIC): `e` and `encoded_` must stay
    /// untouched until the sqlite3_step that follows.
    bool bind(sqlite3_stmt* st, const Exchange& e, bool withId);
    std::vector<Exchange> select(const std::string& where, std::int64_t arg, std::size_t max,
                                 bool withBodies);
    std::uint64_t scalar(const char* sql);
    sqlite3* db_ = nullptr;
    sqlite3_stmt* insert_ = nullptr;
    std::string encoded_[6]; // bind()'s encoded header lists, messages and rule names, reused
    sqlite3_stmt* replace_ = nullptr;
    bool inTransaction_ = false;
    std::string path_;
    std::string error_;
};

/// Header lists as stored in the file: (u32 count, then u32-length-prefixed name/value pairs).
std::string encodeHeaders(const std::vector<Header>& h);
std::vector<Header> decodeHeaders(std::string_view blob);
/// Messages as stored in the file (column `messages`): u32 count, then per message i64 timeNs,
/// u8 fromClient, u8 opcode, u64 size, u32 length and the data bytes (host byte order, like the
/// header blobs). Decoding stops at the first message that does not fit (a cut blob).
std::string encodeMessages(const std::vector<Message>& messages);
std::vector<Message> decodeMessages(std::string_view blob);

} // namespace portico::capture
