// SQLite session files (WAL): schema, batched inserts, loading.
#include <portico/capture/store.h>

#include <sqlite3.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace portico::capture {

namespace {
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS portico_session (key TEXT PRIMARY KEY, value TEXT);
INSERT OR IGNORE INTO portico_session VALUES ('format', 'portico-capture-1');
CREATE TABLE IF NOT EXISTS exchanges (
  id INTEGER PRIMARY KEY,
  started_unix_ns INTEGER NOT NULL,
  connection_id INTEGER, stream_id INTEGER, protocol INTEGER, http_version INTEGER,
  tls_version TEXT, alpn TEXT, client TEXT, local_port INTEGER,
  vhost TEXT, route TEXT, method TEXT, scheme TEXT, authority TEXT, target TEXT,
  status INTEGER, error TEXT, flags INTEGER,
  request_headers BLOB, request_trailers BLOB, request_body BLOB,
  request_body_size INTEGER, request_headers_size INTEGER,
  response_headers BLOB, response_body BLOB, response_body_size INTEGER, response_headers_size INTEGER,
  accepted_ns INTEGER, tls_done_ns INTEGER, request_headers_ns INTEGER, request_body_done_ns INTEGER,
  route_matched_ns INTEGER, upstream_connected_ns INTEGER, upstream_first_byte_ns INTEGER,
  response_first_byte_ns INTEGER, response_done_ns INTEGER,
  message_count INTEGER, messages BLOB, response_trailers BLOB
);
)sql";
// Columns added after portico-capture-1's first files: added to older files on open (NULL there).
constexpr const char* kAddedColumns[][2] = {{"message_count", "INTEGER"},
                                            {"messages", "BLOB"},
                                            {"response_trailers", "BLOB"},
                                            {"source", "INTEGER"},
                                            {"client_process", "TEXT"},
                                            {"upstream_address", "TEXT"},
                                            {"upstream_tls_version", "TEXT"},
                                            {"upstream_alpn", "TEXT"},
                                            {"upstream_resolved_ns", "INTEGER"},
                                            {"upstream_tcp_connected_ns", "INTEGER"},
                                            {"upstream_request_sent_ns", "INTEGER"},
                                            {"rules", "TEXT"},
                                            {"original_request_fields", "BLOB"},
                                            {"original_response_fields", "BLOB"},
                                            {"original_request_body", "BLOB"},
                                            {"original_response_body", "BLOB"}};
// The phases with a column in the first files (Phase's first nine); later phases have theirs at the end.
constexpr std::size_t kFirstPhases = 9;
constexpr const char* kColumns =
    "id, started_unix_ns, connection_id, stream_id, protocol, http_version, tls_version, alpn, client, "
    "local_port, vhost, route, method, scheme, authority, target, status, error, flags, request_headers, "
    "request_trailers, request_body, request_body_size, request_headers_size, response_headers, "
    "response_body, response_body_size, response_headers_size, accepted_ns, tls_done_ns, "
    "request_headers_ns, request_body_done_ns, route_matched_ns, upstream_connected_ns, "
    "upstream_first_byte_ns, response_first_byte_ns, response_done_ns, message_count, messages, "
    "response_trailers, source, client_process, upstream_address, upstream_tls_version, upstream_alpn, "
    "upstream_resolved_ns, upstream_tcp_connected_ns, upstream_request_sent_ns, rules, "
    "original_request_fields, original_response_fields, original_request_body, original_response_body";
constexpr int kColumnCount = 53;
static_assert(kPhaseCount == kFirstPhases + 3, "a new Phase needs its column here");

std::string text(sqlite3_stmt* st, int i) {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(st, i));
    int n = sqlite3_column_bytes(st, i);
    return p ? std::string(p, static_cast<std::size_t>(n)) : std::string();
}
} // namespace

std::string encodeHeaders(const std::vector<Header>& h) {
    std::string out;
    auto u32 = [&](std::size_t n) {
        auto v = static_cast<std::uint32_t>(n);
        out.append(reinterpret_cast<const char*>(&v), 4);
    };
    u32(h.size());
    for (const auto& x : h) {
        u32(x.name.size());
        out += x.name;
        u32(x.value.size());
        out += x.value;
    }
    return out;
}

std::vector<Header> decodeHeaders(std::string_view b) {
    std::vector<Header> out;
    std::size_t at = 0;
    auto u32 = [&](std::uint32_t& v) {
        if (b.size() - at < 4) return false;
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return true;
    };
    auto str = [&](std::string& s) {
        std::uint32_t n = 0;
        if (!u32(n) || b.size() - at < n) return false;
        s.assign(b.data() + at, n);
        at += n;
        return true;
    };
    std::uint32_t count = 0;
    if (!u32(count)) return out;
    for (std::uint32_t i = 0; i < count; ++i) {
        Header h;
        if (!str(h.name) || !str(h.value)) break;
        out.push_back(std::move(h));
    }
    return out;
}

std::string encodeMessages(const std::vector<Message>& messages) {
    std::string out;
    auto put = [&](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(static_cast<std::uint32_t>(messages.size()));
    for (const auto& m : messages) {
        put(static_cast<std::int64_t>(m.timeNs));
        // Bit 0: from the client; bit 1: a gRPC message the stream ended inside; bit 2: a
        // WebSocket message sent with permessage-deflate (older files have only bits 0 and 1).
        put(static_cast<std::uint8_t>((m.fromClient ? 1 : 0) | (m.cut ? 2 : 0) | (m.compressed ? 4 : 0)));
        put(m.opcode);
        put(static_cast<std::uint64_t>(m.size));
        put(static_cast<std::uint32_t>(m.data.size()));
        out += m.data;
    }
    return out;
}

std::vector<Message> decodeMessages(std::string_view b) {
    std::vector<Message> out;
    std::size_t at = 0;
    auto get = [&](auto& v) {
        if (b.size() - at < sizeof v) return false;
        std::memcpy(&v, b.data() + at, sizeof v);
        at += sizeof v;
        return true;
    };
    std::uint32_t count = 0;
    if (!get(count)) return out;
    for (std::uint32_t i = 0; i < count; ++i) {
        Message m;
        std::int64_t t = 0;
        std::uint8_t from = 0;
        std::uint64_t size = 0;
        std::uint32_t len = 0;
        if (!get(t) || !get(from) || !get(m.opcode) || !get(size) || !get(len) || b.size() - at < len) break;
        m.timeNs = t;
        m.fromClient = (from & 1) != 0;
        m.cut = (from & 2) != 0;
        m.compressed = (from & 4) != 0;
        m.size = size;
        m.data.assign(b.data() + at, len);
        at += len;
        out.push_back(std::move(m));
    }
    return out;
}

bool Store::migrate() {
    // Older files lack the columns added since; ALTER TABLE ADD COLUMN leaves their rows NULL.
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA table_info(exchanges)", -1, &st, nullptr) != SQLITE_OK) {
        error_ = sqlite3_errmsg(db_);
        return false;
    }
    std::vector<std::string> have;
    while (sqlite3_step(st) == SQLITE_ROW)
        have.push_back(text(st, 1));
    sqlite3_finalize(st);
    for (const auto& [name, type] : kAddedColumns) {
        if (std::find(have.begin(), have.end(), name) != have.end()) continue;
        const std::string sql = std::string("ALTER TABLE exchanges ADD COLUMN ") + name + " " + type;
        if (!exec(sql.c_str())) return false;
    }
    return true;
}

std::unique_ptr<Store> Store::connect(const std::string& path, int flags, const char* pragma,
                                      std::string& error) {
    std::unique_ptr<Store> s(new Store());
    s->path_ = path;
    if (sqlite3_open_v2(path.c_str(), &s->db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
        error = path + ": " + (s->db_ ? sqlite3_errmsg(s->db_) : "cannot open");
        return nullptr;
    }
    sqlite3_busy_timeout(s->db_, 2000);
    if (pragma && !s->exec(pragma)) {
        error = path + ": " + s->error_;
        return nullptr;
    }
    return s;
}

std::unique_ptr<Store> Store::open(const std::string& path, std::string& error) {
    // Captured traffic holds cookies and tokens: a new session file is the owner's only (0600);
    // SQLite gives its -wal and -shm files the same mode. An existing file keeps its mode.
    if (const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); fd >= 0)
        ::close(fd);
    auto s = connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr, error);
    if (!s) return nullptr;
    if (!s->exec("PRAGMA journal_mode=WAL") || !s->exec("PRAGMA synchronous=NORMAL") ||
        !s->exec("PRAGMA cache_size=-1024") || !s->exec(kSchema) || !s->migrate()) {
        error = path + ": " + s->error_;
        if (s->error_.find("not a database") != std::string::npos)
            error = path + ": not a Portico session file (" + s->error_ + ")";
        return nullptr;
    }
    std::string cols = kColumns;
    std::string q(kColumnCount * 2 - 1, '?');
    for (std::size_t i = 1; i < q.size(); i += 2)
        q[i] = ',';
    std::string ins = "INSERT INTO exchanges (" + cols + ") VALUES (" + q + ")";
    std::string rep = "INSERT OR REPLACE INTO exchanges (" + cols + ") VALUES (" + q + ")";
    if (sqlite3_prepare_v2(s->db_, ins.c_str(), -1, &s->insert_, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db_, rep.c_str(), -1, &s->replace_, nullptr) != SQLITE_OK) {
        error = path + ": " + sqlite3_errmsg(s->db_);
        return nullptr;
    }
    return s;
}

std::unique_ptr<Store> Store::openReadOnly(const std::string& path, std::string& error) {
    return connect(path, SQLITE_OPEN_READONLY, "PRAGMA cache_size=-2048", error);
}

std::unique_ptr<Store> Store::openForCheckpoints(const std::string& path, std::string& error) {
    // A connection learns the file is in WAL mode when it first reads it; until then a
    // checkpoint is a no-op.
    return connect(path, SQLITE_OPEN_READWRITE, "PRAGMA journal_mode", error);
}

bool Store::checkpoint() {
    if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) == SQLITE_OK)
        return true;
    error_ = sqlite3_errmsg(db_);
    return false;
}

Store::~Store() {
    if (inTransaction_) commit();
    sqlite3_finalize(insert_);
    sqlite3_finalize(replace_);
    sqlite3_close(db_);
}

bool Store::exec(const char* sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
        error_ = msg ? msg : sqlite3_errmsg(db_);
        sqlite3_free(msg);
        return false;
    }
    return true;
}

bool Store::begin() {
    if (inTransaction_) return true;
    if (!exec("BEGIN")) return false;
    inTransaction_ = true;
    return true;
}

bool Store::commit() {
    if (!inTransaction_) return true;
    if (exec("COMMIT")) {
        inTransaction_ = false;
        return true;
    }
    // A COMMIT that failed busy (another connection held the lock past the busy timeout) leaves
    // the transaction open: the next commit tries again instead of a BEGIN inside it failing.
    inTransaction_ = sqlite3_get_autocommit(db_) == 0;
    return false;
}

bool Store::bind(sqlite3_stmt* st, const Exchange& e, bool withId) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    int i = 1;
    auto i64 = [&](std::int64_t v) { sqlite3_bind_int64(st, i++, v); };
    auto str = [&](const std::string& v) {
        sqlite3_bind_text(st, i++, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    };
    auto blob = [&](const std::string& v) {
        sqlite3_bind_blob(st, i++, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    };
    std::size_t k = 0;
    auto encoded = [&](std::string v) -> const std::string& {
        encoded_[k] = std::move(v);
        return encoded_[k++];
    };
    if (withId)
        i64(static_cast<std::int64_t>(e.id));
    else
        sqlite3_bind_null(st, i++);
    i64(e.startedUnixNs);
    i64(static_cast<std::int64_t>(e.connectionId));
    i64(e.streamId);
    i64(static_cast<int>(e.protocol));
    i64(e.httpVersion);
    str(e.tlsVersion);
    str(e.alpn);
    str(e.client);
    i64(e.localPort);
    str(e.vhost);
    str(e.route);
    str(e.method);
    str(e.scheme);
    str(e.authority);
    blob(e.target);
    i64(e.status);
    str(e.error);
    i64(e.flags);
    blob(encoded(encodeHeaders(e.requestHeaders)));
    blob(encoded(encodeHeaders(e.requestTrailers)));
    blob(e.requestBody);
    i64(static_cast<std::int64_t>(e.requestBodySize));
    i64(static_cast<std::int64_t>(e.requestHeadersSize));
    blob(encoded(encodeHeaders(e.responseHeaders)));
    blob(e.responseBody);
    i64(static_cast<std::int64_t>(e.responseBodySize));
    i64(static_cast<std::int64_t>(e.responseHeadersSize));
    auto phase = [&](std::size_t p) {
        if (e.phases[p] < 0)
            sqlite3_bind_null(st, i++);
        else
            i64(e.phases[p]);
    };
    for (std::size_t p = 0; p < kFirstPhases; ++p)
        phase(p);
    i64(static_cast<std::int64_t>(e.messageCount));
    if (e.messages.empty())
        sqlite3_bind_null(st, i++);
    else
        blob(encoded(encodeMessages(e.messages)));
    if (e.responseTrailers.empty())
        sqlite3_bind_null(st, i++);
    else
        blob(encoded(encodeHeaders(e.responseTrailers)));
    i64(static_cast<int>(e.source));
    str(e.clientProcess);
    str(e.upstreamAddress);
    str(e.upstreamTlsVersion);
    str(e.upstreamAlpn);
    for (std::size_t p = kFirstPhases; p < kPhaseCount; ++p)
        phase(p);
    str(encoded(joinRuleNames(e.rules))); // one a line
    blob(e.originalRequestFields);
    blob(e.originalResponseFields);
    blob(e.originalRequestBody);
    blob(e.originalResponseBody);
    return true;
}

bool Store::append(std::vector<Exchange>& records) {
    if (records.empty()) return true;
    if (!begin()) return false;
    for (auto& e : records) {
        bind(e.id ? replace_ : insert_, e, e.id != 0);
        sqlite3_stmt* st = e.id ? replace_ : insert_;
        if (sqlite3_step(st) != SQLITE_DONE) {
            error_ = sqlite3_errmsg(db_);
            return false;
        }
        if (!e.id) e.id = static_cast<std::uint64_t>(sqlite3_last_insert_rowid(db_));
    }
    return true;
}

bool Store::update(const Exchange& e) {
    if (!begin()) return false;
    bind(replace_, e, true);
    if (sqlite3_step(replace_) != SQLITE_DONE) {
        error_ = sqlite3_errmsg(db_);
        return false;
    }
    return true;
}

std::vector<Exchange> Store::load(std::uint64_t sinceId, std::size_t max, bool withBodies) {
    return select("id > ? ORDER BY id", static_cast<std::int64_t>(sinceId), max, withBodies);
}

std::optional<Exchange> Store::get(std::uint64_t id) {
    auto v = select("id = ?", static_cast<std::int64_t>(id), 1, true);
    if (v.empty()) return std::nullopt;
    return std::move(v.front());
}

std::vector<Exchange> Store::select(const std::string& where, std::int64_t arg, std::size_t max,
                                    bool withBodies) {
    std::vector<Exchange> out;
    // Each name between a space and a comma here, so that " request_body," is not found inside
    // "original_request_body,".
    std::string cols = std::string(" ") + kColumns + ",";
    if (!withBodies) // same positions, no bytes read for the large columns
        for (const char* big : {" request_body,", " response_body,", " messages,", " original_request_body,",
                                " original_response_body,"}) {
            const auto at = cols.find(big);
            if (at != std::string::npos) cols.replace(at + 1, std::strlen(big) - 2, "NULL");
        }
    cols.pop_back();
    std::string sql = "SELECT " + cols + " FROM exchanges WHERE " + where;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        error_ = sqlite3_errmsg(db_);
        return out;
    }
    sqlite3_bind_int64(st, 1, arg);
    while (out.size() < max && sqlite3_step(st) == SQLITE_ROW) {
        Exchange e;
        int i = 0;
        auto i64 = [&] { return sqlite3_column_int64(st, i++); };
        auto str = [&] { return text(st, i++); };
        e.id = static_cast<std::uint64_t>(i64());
        e.startedUnixNs = i64();
        e.connectionId = static_cast<std::uint64_t>(i64());
        e.streamId = static_cast<std::uint32_t>(i64());
        e.protocol = static_cast<Protocol>(i64());
        e.httpVersion = static_cast<std::uint8_t>(i64());
        e.tlsVersion = str();
        e.alpn = str();
        e.client = str();
        e.localPort = static_cast<std::uint16_t>(i64());
        e.vhost = str();
        e.route = str();
        e.method = str();
        e.scheme = str();
        e.authority = str();
        e.target = str();
        e.status = static_cast<int>(i64());
        e.error = str();
        e.flags = static_cast<std::uint32_t>(i64());
        e.requestHeaders = decodeHeaders(str());
        e.requestTrailers = decodeHeaders(str());
        e.requestBody = str();
        e.requestBodySize = static_cast<std::uint64_t>(i64());
        e.requestHeadersSize = static_cast<std::uint64_t>(i64());
        e.responseHeaders = decodeHeaders(str());
        e.responseBody = str();
        e.responseBodySize = static_cast<std::uint64_t>(i64());
        e.responseHeadersSize = static_cast<std::uint64_t>(i64());
        auto phase = [&](std::size_t p) {
            const bool null = sqlite3_column_type(st, i) == SQLITE_NULL;
            std::int64_t v = i64();
            e.phases[p] = null ? -1 : v;
        };
        for (std::size_t p = 0; p < kFirstPhases; ++p)
            phase(p);
        e.messageCount = static_cast<std::uint64_t>(i64());
        e.messages = decodeMessages(str());
        e.responseTrailers = decodeHeaders(str());
        const std::int64_t source = i64(); // NULL in older files: 0, Server
        e.source = source >= 0 && source <= static_cast<int>(Source::Tunnel) ? static_cast<Source>(source)
                                                                             : Source::Server;
        e.clientProcess = str();
        e.upstreamAddress = str();
        e.upstreamTlsVersion = str();
        e.upstreamAlpn = str();
        for (std::size_t p = kFirstPhases; p < kPhaseCount; ++p)
            phase(p);
        e.rules = splitRuleNames(str()); // NULL in older files: none
        e.originalRequestFields = str();
        e.originalResponseFields = str();
        e.originalRequestBody = str(); // NULL in older files and in a load without bodies: ""
        e.originalResponseBody = str();
        out.push_back(std::move(e));
    }
    sqlite3_finalize(st);
    return out;
}

bool Store::setMeta(const std::string& key, const std::string& value) {
    if (!begin()) return false;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO portico_session (key, value) VALUES (?, ?)", -1, &st,
                           nullptr) != SQLITE_OK) {
        error_ = sqlite3_errmsg(db_);
        return false;
    }
    sqlite3_bind_text(st, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    const bool ok = sqlite3_step(st) == SQLITE_DONE;
    if (!ok) error_ = sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    return ok;
}

std::string Store::meta(const std::string& key) {
    sqlite3_stmt* st = nullptr;
    std::string v;
    if (sqlite3_prepare_v2(db_, "SELECT value FROM portico_session WHERE key = ?", -1, &st, nullptr) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) v = text(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

std::uint64_t Store::scalar(const char* sql) {
    sqlite3_stmt* st = nullptr;
    std::uint64_t n = 0;
    if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = static_cast<std::uint64_t>(sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    return n;
}

std::uint64_t Store::count() { return scalar("SELECT count(*) FROM exchanges"); }
std::uint64_t Store::maxId() { return scalar("SELECT coalesce(max(id), 0) FROM exchanges"); }
std::uint64_t Store::minId() { return scalar("SELECT coalesce(min(id), 0) FROM exchanges"); }

std::uint64_t Store::usedBytes() {
    const std::uint64_t pages = scalar("PRAGMA page_count");
    const std::uint64_t free = scalar("PRAGMA freelist_count");
    return (pages > free ? pages - free : 0) * scalar("PRAGMA page_size");
}

std::uint64_t Store::evict(std::uint64_t maxBytes) {
    if (maxBytes == 0) return 0;
    if (!commit()) return 0;
    const std::uint64_t used = usedBytes();
    if (used <= maxBytes) return 0;
    const std::uint64_t lo = minId(), hi = maxId();
    if (!lo) return 0;
    // Ids are consecutive apart from what eviction removed at the front, so hi − lo + 1 counts the
    // records (count(*) would scan them all). Go to 90 % of the cap in one step, so a file at the
    // cap does not evict on every commit.
    const std::uint64_t records = hi - lo + 1;
    const double share = 1.0 - 0.9 * double(maxBytes) / double(used);
    const std::uint64_t drop =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(double(records) * share));
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "DELETE FROM exchanges WHERE id < ?", -1, &st, nullptr) != SQLITE_OK) {
        error_ = sqlite3_errmsg(db_);
        return 0;
    }
    sqlite3_bind_int64(st, 1, static_cast<std::int64_t>(lo + drop));
    const bool ok = sqlite3_step(st) == SQLITE_DONE;
    if (!ok) error_ = sqlite3_errmsg(db_);
    const auto n = static_cast<std::uint64_t>(sqlite3_changes(db_));
    sqlite3_finalize(st);
    return ok ? n : 0;
}

bool Store::copyTo(const std::string& to) {
    if (!commit()) return false;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "VACUUM INTO ?", -1, &st, nullptr) != SQLITE_OK) {
        error_ = sqlite3_errmsg(db_);
        return false;
    }
    sqlite3_bind_text(st, 1, to.data(), static_cast<int>(to.size()), SQLITE_TRANSIENT);
    const bool ok = sqlite3_step(st) == SQLITE_DONE;
    if (!ok) error_ = to + ": " + sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    return ok;
}

std::string Store::integrityCheck() {
    sqlite3_stmt* st = nullptr;
    std::string r;
    if (sqlite3_prepare_v2(db_, "PRAGMA integrity_check", -1, &st, nullptr) != SQLITE_OK)
        return sqlite3_errmsg(db_);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!r.empty()) r += "\n";
        r += text(st, 0);
    }
    sqlite3_finalize(st);
    return r;
}

} // namespace portico::capture
