// TrafficModel: batched inserts, bounded rows, lazy column text, re-filtering.
#include "trafficmodel.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QLocale>

#include <algorithm>
#include <cstring>
#include <iterator>

namespace portico::ui {

TrafficRow TrafficRow::from(const capture::Exchange& e) {
    TrafficRow r;
    r.id = e.id;
    r.startedUnixNs = e.startedUnixNs;
    r.durationNs = e.durationNs();
    r.responseBodySize = e.responseBodySize;
    r.status = e.status;
    r.protocol = e.protocol;
    r.httpVersion = e.httpVersion;
    r.flags = e.flags;
    r.method = e.method;
    r.scheme = e.scheme;
    r.authority = e.authority;
    r.target = e.target;
    r.vhost = e.vhost;
    r.route = e.route;
    r.client = e.client;
    r.error = e.error;
    return r;
}

capture::Exchange TrafficRow::summary() const {
    capture::Exchange e;
    e.id = id;
    e.startedUnixNs = startedUnixNs;
    e.responseBodySize = responseBodySize;
    e.status = status;
    e.protocol = protocol;
    e.httpVersion = httpVersion;
    e.flags = flags;
    e.method = method;
    e.scheme = scheme;
    e.authority = authority;
    e.target = target;
    e.vhost = vhost;
    e.route = route;
    e.client = client;
    e.error = error;
    if (durationNs >= 0) {
        e.set(capture::Phase::RequestHeaders, 0);
        e.set(capture::Phase::ResponseDone, durationNs);
    }
    return e;
}

QString formatBytes(std::uint64_t bytes) {
    if (bytes < 1000) return QStringLiteral("%1 B").arg(bytes);
    const double v = double(bytes);
    if (bytes < 1000 * 1000) return QStringLiteral("%1 kB").arg(v / 1e3, 0, 'f', 1);
    if (bytes < 1000ull * 1000 * 1000) return QStringLiteral("%1 MB").arg(v / 1e6, 0, 'f', 1);
    return QStringLiteral("%1 GB").arg(v / 1e9, 0, 'f', 2);
}

QString formatDuration(std::int64_t ns) {
    if (ns < 0) return {};
    const double ms = double(ns) / 1e6;
    if (ms < 1) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 3);
    if (ms < 10) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 2);
    if (ms < 1000) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 1);
    return QStringLiteral("%1 s").arg(ms / 1000, 0, 'f', 2);
}

QString protocolName(capture::Protocol p, std::uint8_t httpVersion) {
    switch (p) {
    case capture::Protocol::Http1:
        return httpVersion == 10 ? QStringLiteral("HTTP/1.0") : QStringLiteral("HTTP/1.1");
    case capture::Protocol::Http2:
        return QStringLiteral("h2");
    case capture::Protocol::WebSocket:
        return QStringLiteral("WS");
    case capture::Protocol::Grpc:
        return QStringLiteral("gRPC");
    }
    return {};
}

TrafficModel::TrafficModel(QObject* parent) : QAbstractTableModel(parent) { intern({}); }

TrafficModel::~TrafficModel() = default;

std::uint32_t TrafficModel::intern(const std::string& s) {
    if (auto it = m_stringIndex.find(s); it != m_stringIndex.end()) return it->second;
    const auto i = static_cast<std::uint32_t>(m_strings.size());
    m_strings.push_back(s);
    m_stringIndex.emplace(s, i);
    return i;
}

void TrafficModel::storeTarget(Row& r, std::string_view s) {
    constexpr std::size_t kChunkBytes = 256 * 1024;
    if (m_chunks.empty() || m_chunks.back().size - m_chunks.back().used < s.size()) {
        Chunk c;
        c.size = std::max(kChunkBytes, s.size());
        c.bytes = std::make_unique<char[]>(c.size);
        m_chunks.push_back(std::move(c));
    }
    Chunk& c = m_chunks.back();
    std::memcpy(c.bytes.get() + c.used, s.data(), s.size());
    r.target = c.bytes.get() + c.used;
    r.targetLength = static_cast<std::uint32_t>(s.size());
    r.chunk = m_firstChunk + static_cast<std::uint32_t>(m_chunks.size() - 1);
    c.used += s.size();
}

void TrafficModel::freeChunks() {
    // Paths are written in id order and rows leave oldest first: every chunk before the oldest
    // kept row's chunk is unused.
    const std::uint32_t keep =
        m_all.empty() ? m_firstChunk + std::uint32_t(m_chunks.size()) : m_all.front().chunk;
    while (!m_chunks.empty() && m_firstChunk < keep && m_chunks.size() > 1) {
        m_chunks.pop_front();
        ++m_firstChunk;
    }
}

TrafficModel::Row TrafficModel::compact(const TrafficRow& t) {
    Row r;
    r.id = t.id;
    r.startedUnixNs = t.startedUnixNs;
    r.durationNs = t.durationNs;
    r.responseBodySize = t.responseBodySize;
    r.status = t.status;
    r.flags = t.flags;
    r.protocol = static_cast<std::uint8_t>(t.protocol);
    r.httpVersion = t.httpVersion;
    r.method = intern(t.method);
    r.scheme = intern(t.scheme);
    r.authority = intern(t.authority);
    r.vhost = intern(t.vhost);
    r.route = intern(t.route);
    r.client = intern(t.client);
    r.error = intern(t.error);
    storeTarget(r, t.target);
    return r;
}

template <class Out> void TrafficModel::copyFields(const Row& r, Out& out) const {
    // TrafficRow and capture::Exchange name these fields alike; assignments reuse the strings'
    // buffers (the filter's scratch record allocates nothing after the first rows).
    out.id = r.id;
    out.startedUnixNs = r.startedUnixNs;
    out.responseBodySize = r.responseBodySize;
    out.status = r.status;
    out.protocol = static_cast<capture::Protocol>(r.protocol);
    out.httpVersion = r.httpVersion;
    out.flags = r.flags;
    out.method = str(r.method);
    out.scheme = str(r.scheme);
    out.authority = str(r.authority);
    out.target.assign(r.target, r.targetLength);
    out.vhost = str(r.vhost);
    out.route = str(r.route);
    out.client = str(r.client);
    out.error = str(r.error);
}

TrafficRow TrafficModel::expand(const Row& r) const {
    TrafficRow t;
    copyFields(r, t);
    t.durationNs = r.durationNs;
    return t;
}

bool TrafficModel::matches(const Row& r) const {
    if (!m_filter) return true;
    capture::Exchange& e = m_scratch;
    copyFields(r, e);
    e.phases.fill(-1);
    if (r.durationNs >= 0) {
        e.set(capture::Phase::RequestHeaders, 0);
        e.set(capture::Phase::ResponseDone, r.durationNs);
    }
    return m_filter->matches(e);
}

bool TrafficModel::less(const Row* a, const Row* b) const {
    if (m_sortOrder == Qt::DescendingOrder) std::swap(a, b);
    auto byId = [&] { return a->id < b->id; };
    auto three = [&](auto x, auto y) { return x < y ? true : y < x ? false : byId(); };
    switch (m_sortColumn) {
    case Protocol:
        return three(std::pair(a->protocol, a->httpVersion), std::pair(b->protocol, b->httpVersion));
    case Method:
        return three(std::string_view(str(a->method)), std::string_view(str(b->method)));
    case Host:
        return three(std::string_view(str(a->authority)), std::string_view(str(b->authority)));
    case Path:
        return three(target(*a), target(*b));
    case Status:
        return three(a->status, b->status);
    case Size:
        return three(a->responseBodySize, b->responseBodySize);
    case Duration:
        return three(a->durationNs, b->durationNs);
    case Route:
        return three(std::string_view(str(a->route)), std::string_view(str(b->route)));
    default:
        return byId();
    }
}

int TrafficModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int TrafficModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

std::uint64_t TrafficModel::idAt(int row) const {
    return row >= 0 && std::size_t(row) < m_rows.size() ? m_rows[row]->id : 0;
}

std::optional<TrafficRow> TrafficModel::rowAt(int row) const {
    if (row < 0 || std::size_t(row) >= m_rows.size()) return std::nullopt;
    return expand(*m_rows[row]);
}

int TrafficModel::rowOfId(std::uint64_t id) const {
    if (naturalOrder()) {
        const bool up = m_sortOrder == Qt::AscendingOrder;
        auto pos = std::lower_bound(m_rows.begin(), m_rows.end(), id, [up](const Row* r, std::uint64_t v) {
            return up ? r->id < v : r->id > v;
        });
        return pos != m_rows.end() && (*pos)->id == id ? int(pos - m_rows.begin()) : -1;
    }
    for (std::size_t i = 0; i < m_rows.size(); ++i)
        if (m_rows[i]->id == id) return int(i);
    return -1;
}

std::size_t TrafficModel::memoryBytes() const {
    std::size_t n = m_all.size() * sizeof(Row) + m_rows.size() * sizeof(const Row*);
    for (const auto& c : m_chunks)
        n += c.size;
    for (const auto& s : m_strings)
        n += sizeof(std::string) * 2 + s.capacity() * 2 + 32;
    return n;
}

QVariant TrafficModel::data(const QModelIndex& index, int role) const {
    if (index.row() < 0 || std::size_t(index.row()) >= m_rows.size()) return {};
    const Row* r = m_rows[index.row()];
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole:
        switch (column) {
        case Time: {
            const auto ms = r->startedUnixNs / 1000000;
            return QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("HH:mm:ss.zzz"));
        }
        case Protocol:
            return protocolName(static_cast<capture::Protocol>(r->protocol), r->httpVersion);
        case Method:
            return QString::fromStdString(str(r->method));
        case Host:
            return QString::fromStdString(str(r->authority));
        case Path:
            return QString::fromUtf8(r->target, qsizetype(r->targetLength));
        case Status:
            if (r->status == 0)
                return str(r->error).empty() ? QStringLiteral("—") : QString::fromStdString(str(r->error));
            return r->status;
        case Size:
            return formatBytes(r->responseBodySize);
        case Duration:
            return formatDuration(r->durationNs);
        case Route:
            return QString::fromStdString(str(r->route));
        }
        return {};
    case Qt::TextAlignmentRole:
        if (column == Size || column == Duration || column == Status)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::ForegroundRole:
        // Contrast ≥ 4.5:1 (WCAG AA): #a93226 is 6.6:1 on white, #a04000 6.5:1 (≥ 5.2:1 on the alternate
        // rows).
        if (r->status == 0 || r->status >= 500) return QBrush(QColor(0xa9, 0x32, 0x26));
        if (r->status >= 400) return QBrush(QColor(0xa0, 0x40, 0x00));
        return {};
    case kIdRole:
        return QVariant::fromValue<qulonglong>(r->id);
    }
    return {};
}

QVariant TrafficModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Time:
        return tr("Time");
    case Protocol:
        return tr("Protocol");
    case Method:
        return tr("Method");
    case Host:
        return tr("Host");
    case Path:
        return tr("Path");
    case Status:
        return tr("Status");
    case Size:
        return tr("Size");
    case Duration:
        return tr("Duration");
    case Route:
        return tr("Route");
    }
    return {};
}

void TrafficModel::relayout(const std::function<void()>& change) {
    emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList before = persistentIndexList();
    std::vector<std::uint64_t> ids;
    ids.reserve(std::size_t(before.size()));
    for (const auto& i : before)
        ids.push_back(idAt(i.row()));
    change();
    QModelIndexList after;
    after.reserve(before.size());
    for (qsizetype k = 0; k < before.size(); ++k) {
        const int row = ids[std::size_t(k)] ? rowOfId(ids[std::size_t(k)]) : -1;
        after.push_back(row >= 0 ? index(row, before[k].column()) : QModelIndex());
    }
    changePersistentIndexList(before, after);
    emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

void TrafficModel::sort(int column, Qt::SortOrder order) {
    if (column < 0 || column >= ColumnCount) column = Time;
    if (column == m_sortColumn && order == m_sortOrder) return;
    relayout([&] {
        m_sortColumn = column;
        m_sortOrder = order;
        std::sort(m_rows.begin(), m_rows.end(), [this](const Row* a, const Row* b) { return less(a, b); });
    });
}

void TrafficModel::append(const std::vector<capture::Exchange>& batch) {
    std::vector<TrafficRow> rows;
    rows.reserve(batch.size());
    for (const auto& e : batch)
        rows.push_back(TrafficRow::from(e));
    std::vector<bool> matched;
    matched.reserve(batch.size());
    for (const auto& e : batch)
        matched.push_back(!m_filter || m_filter->matches(e));
    appendRows(std::move(rows), matched, m_generation);
}

void TrafficModel::appendRows(std::vector<TrafficRow>&& rows, const std::vector<bool>& matched,
                              std::uint64_t generation) {
    std::vector<const Row*> shown;
    const bool verdicts = generation == m_generation && matched.size() == rows.size();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (!m_all.empty() && rows[i].id <= m_all.back().id) continue; // already have it
        m_all.push_back(compact(rows[i]));
        const Row& r = m_all.back();
        if (verdicts ? bool(matched[i]) : matches(r)) shown.push_back(&r);
    }
    insertShown(shown);
}

void TrafficModel::insertShown(std::vector<const Row*>& shown) {
    // Rows of this batch that the bound pushes out at once (a batch larger than maxRows) are never
    // shown; the pointers are dropped before trim() frees them.
    if (m_all.size() > m_maxRows) {
        const std::uint64_t keepFrom = m_all[m_all.size() - m_maxRows].id;
        std::erase_if(shown, [keepFrom](const Row* r) { return r->id < keepFrom; });
    }
    trim();
    if (shown.empty()) return;
    if (naturalOrder() && m_sortOrder == Qt::AscendingOrder) {
        const int at = int(m_rows.size());
        beginInsertRows({}, at, at + int(shown.size()) - 1);
        m_rows.insert(m_rows.end(), shown.begin(), shown.end());
        endInsertRows();
    } else if (naturalOrder()) { // newest first: the batch goes on top, newest at row 0
        beginInsertRows({}, 0, int(shown.size()) - 1);
        m_rows.insert(m_rows.begin(), shown.rbegin(), shown.rend());
        endInsertRows();
    } else {
        std::sort(shown.begin(), shown.end(), [this](const Row* a, const Row* b) { return less(a, b); });
        relayout([&] {
            std::vector<const Row*> merged;
            merged.reserve(m_rows.size() + shown.size());
            std::merge(m_rows.begin(), m_rows.end(), shown.begin(), shown.end(), std::back_inserter(merged),
                       [this](const Row* a, const Row* b) { return less(a, b); });
            m_rows.swap(merged);
        });
    }
}

void TrafficModel::trim() {
    if (m_all.size() <= m_maxRows) return;
    dropBefore(m_all[m_all.size() - m_maxRows].id);
}

std::size_t TrafficModel::dropBefore(std::uint64_t keepFrom) {
    if (m_all.empty() || m_all.front().id >= keepFrom) return 0;
    emit rowsLeaving(keepFrom);
    auto gone = [keepFrom](const Row* r) { return r->id < keepFrom; };
    if (naturalOrder() && m_sortOrder == Qt::AscendingOrder) {
        std::size_t n = 0;
        while (n < m_rows.size() && gone(m_rows[n]))
            ++n;
        if (n) {
            beginRemoveRows({}, 0, int(n) - 1);
            m_rows.erase(m_rows.begin(), m_rows.begin() + std::ptrdiff_t(n));
            endRemoveRows();
        }
    } else if (naturalOrder()) {
        std::size_t n = 0;
        while (n < m_rows.size() && gone(m_rows[m_rows.size() - 1 - n]))
            ++n;
        if (n) {
            const int first = int(m_rows.size() - n);
            beginRemoveRows({}, first, int(m_rows.size()) - 1);
            m_rows.erase(m_rows.end() - std::ptrdiff_t(n), m_rows.end());
            endRemoveRows();
        }
    } else if (std::any_of(m_rows.begin(), m_rows.end(), gone)) {
        relayout([&] { std::erase_if(m_rows, gone); });
    }
    std::size_t count = 0;
    while (!m_all.empty() && m_all.front().id < keepFrom) {
        m_all.pop_front();
        ++count;
    }
    freeChunks();
    return count;
}

TrafficModel::Row* TrafficModel::find(std::uint64_t id) {
    auto pos = std::lower_bound(m_all.begin(), m_all.end(), id,
                                [](const Row& r, std::uint64_t v) { return r.id < v; });
    return pos != m_all.end() && pos->id == id ? &*pos : nullptr;
}

void TrafficModel::complete(Row& r, const TrafficRow& row) {
    // What a newer version of a record changes (the path and the rest stay).
    r.durationNs = row.durationNs;
    r.responseBodySize = row.responseBodySize;
    r.status = row.status;
    r.flags = row.flags;
    r.error = intern(row.error);
}

bool TrafficModel::update(const TrafficRow& row) {
    Row* found = find(row.id);
    if (!found) return false;
    Row& r = *found;
    const bool moves = !naturalOrder() && (r.durationNs != row.durationNs || r.status != row.status ||
                                           r.responseBodySize != row.responseBodySize);
    if (!moves) {
        complete(r, row);
        if (const int shown = rowOfId(row.id); shown >= 0)
            emit dataChanged(index(shown, 0), index(shown, ColumnCount - 1));
        return true;
    }
    relayout([&] {
        const int at = rowOfId(row.id);
        if (at >= 0) m_rows.erase(m_rows.begin() + at);
        complete(r, row);
        if (at >= 0)
            m_rows.insert(std::upper_bound(m_rows.begin(), m_rows.end(), &r,
                                           [this](const Row* a, const Row* b) { return less(a, b); }),
                          &r);
    });
    return true;
}

void TrafficModel::updateRows(const std::vector<TrafficRow>& rows) {
    if (rows.empty()) return;
    if (naturalOrder() || rows.size() == 1) {
        for (const auto& row : rows)
            update(row);
        return;
    }
    // Sorted by a column the update can change: one pass takes the changed rows out, one merge
    // puts them back in order.
    relayout([&] {
        std::vector<std::pair<Row*, const TrafficRow*>> changes;
        for (const auto& row : rows)
            if (Row* r = find(row.id)) changes.emplace_back(r, &row);
        std::vector<const Row*> moved;
        for (const auto& [r, row] : changes)
            moved.push_back(r);
        std::sort(moved.begin(), moved.end());
        std::vector<const Row*> shownMoved;
        std::erase_if(m_rows, [&](const Row* r) {
            const bool hit = std::binary_search(moved.begin(), moved.end(), r);
            if (hit) shownMoved.push_back(r);
            return hit;
        });
        for (const auto& [r, row] : changes)
            complete(*r, *row);
        std::sort(shownMoved.begin(), shownMoved.end(),
                  [this](const Row* a, const Row* b) { return less(a, b); });
        std::vector<const Row*> merged;
        merged.reserve(m_rows.size() + shownMoved.size());
        std::merge(m_rows.begin(), m_rows.end(), shownMoved.begin(), shownMoved.end(),
                   std::back_inserter(merged), [this](const Row* a, const Row* b) { return less(a, b); });
        m_rows.swap(merged);
    });
}

void TrafficModel::clear() {
    beginResetModel();
    m_rows.clear();
    m_all.clear();
    m_chunks.clear();
    m_firstChunk = 0;
    m_strings.clear();
    m_stringIndex.clear();
    intern({});
    endResetModel();
}

void TrafficModel::setFilter(std::optional<capture::Filter> filter, const Details& details) {
    if (filter && filter->empty()) filter.reset();
    m_filter = std::move(filter);
    ++m_generation;
    beginResetModel();
    m_rows.clear();
    m_rows.shrink_to_fit();
    if (!m_filter) {
        m_rows.reserve(m_all.size());
        for (const auto& r : m_all)
            m_rows.push_back(&r);
    } else if (!details || !m_filter->readsHeaders() || m_all.empty()) {
        for (const auto& r : m_all)
            if (matches(r)) m_rows.push_back(&r);
    } else {
        // Headers are read from the engine in chunks (never a million records at once); rows it
        // no longer has are matched on their summary.
        constexpr std::size_t kChunk = 20000;
        std::vector<capture::Exchange> full;
        std::size_t f = 0;
        std::uint64_t since = m_all.front().id - 1;
        bool more = true;
        for (const auto& r : m_all) {
            while (more && (f == full.size() || full[f].id < r.id)) {
                if (f == full.size()) {
                    full = details(since, kChunk);
                    f = 0;
                    if (full.empty()) {
                        more = false;
                        break;
                    }
                    since = full.back().id;
                    continue;
                }
                ++f;
            }
            const bool match =
                f < full.size() && full[f].id == r.id ? m_filter->matches(full[f]) : matches(r);
            if (match) m_rows.push_back(&r);
        }
    }
    if (!(naturalOrder() && m_sortOrder == Qt::AscendingOrder))
        std::sort(m_rows.begin(), m_rows.end(), [this](const Row* a, const Row* b) { return less(a, b); });
    endResetModel();
}

} // namespace portico::ui
