// TrafficModel: batched inserts, bounded rows, lazy column text, re-filtering.
#include "trafficmodel.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QLocale>

#include <algorithm>

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

TrafficModel::TrafficModel(QObject* parent) : QAbstractTableModel(parent) {}

int TrafficModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int TrafficModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

std::uint64_t TrafficModel::idAt(int row) const {
    return row >= 0 && std::size_t(row) < m_rows.size() ? m_rows[row]->id : 0;
}

const TrafficRow* TrafficModel::rowAt(int row) const {
    return row >= 0 && std::size_t(row) < m_rows.size() ? m_rows[row] : nullptr;
}

int TrafficModel::rowOfId(std::uint64_t id) const {
    auto pos = std::lower_bound(m_rows.begin(), m_rows.end(), id,
                                [](const TrafficRow* r, std::uint64_t v) { return r->id < v; });
    return pos != m_rows.end() && (*pos)->id == id ? int(pos - m_rows.begin()) : -1;
}

QVariant TrafficModel::data(const QModelIndex& index, int role) const {
    const TrafficRow* r = rowAt(index.row());
    if (!r) return {};
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
            return protocolName(r->protocol, r->httpVersion);
        case Method:
            return QString::fromStdString(r->method);
        case Host:
            return QString::fromStdString(r->authority);
        case Path:
            return QString::fromStdString(r->target);
        case Status:
            if (r->status == 0)
                return r->error.empty() ? QStringLiteral("—") : QString::fromStdString(r->error);
            return r->status;
        case Size:
            return formatBytes(r->responseBodySize);
        case Duration:
            return formatDuration(r->durationNs);
        case Route:
            return QString::fromStdString(r->route);
        }
        return {};
    case Qt::TextAlignmentRole:
        if (column == Size || column == Duration || column == Status)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::ForegroundRole:
        if (r->status == 0 || r->status >= 500) return QBrush(QColor(192, 57, 43));
        if (r->status >= 400) return QBrush(QColor(211, 84, 0));
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

void TrafficModel::append(const std::vector<capture::Exchange>& batch) {
    if (batch.empty()) return;
    std::vector<const TrafficRow*> shown;
    for (const auto& e : batch) {
        if (!m_all.empty() && e.id <= m_all.back().id) continue; // already have it
        m_all.push_back(TrafficRow::from(e));
        if (!m_filter || m_filter->matches(e)) shown.push_back(&m_all.back());
    }
    insertShown(shown);
}

void TrafficModel::appendRows(std::vector<TrafficRow>&& rows, const std::vector<bool>& matched,
                              std::uint64_t generation) {
    std::vector<const TrafficRow*> shown;
    const bool verdicts = generation == m_generation && matched.size() == rows.size();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (!m_all.empty() && rows[i].id <= m_all.back().id) continue;
        m_all.push_back(std::move(rows[i]));
        const TrafficRow& r = m_all.back();
        if (verdicts ? bool(matched[i]) : (!m_filter || m_filter->matches(r.summary()))) shown.push_back(&r);
    }
    insertShown(shown);
}

void TrafficModel::insertShown(std::vector<const TrafficRow*>& shown) {
    // Rows of this batch that the bound pushes out at once (a batch larger than maxRows) are never
    // shown; the pointers are dropped before trim() frees them.
    if (m_all.size() > m_maxRows) {
        const std::uint64_t keepFrom = m_all[m_all.size() - m_maxRows].id;
        std::erase_if(shown, [keepFrom](const TrafficRow* r) { return r->id < keepFrom; });
    }
    trim();
    if (shown.empty()) return;
    const int at = int(m_rows.size());
    beginInsertRows({}, at, at + int(shown.size()) - 1);
    m_rows.insert(m_rows.end(), shown.begin(), shown.end());
    endInsertRows();
}

void TrafficModel::trim() {
    if (m_all.size() <= m_maxRows) return;
    dropBefore(m_all[m_all.size() - m_maxRows].id);
}

std::size_t TrafficModel::dropBefore(std::uint64_t keepFrom) {
    if (m_all.empty() || m_all.front().id >= keepFrom) return 0;
    emit rowsLeaving(keepFrom);
    std::size_t shownGone = 0;
    while (shownGone < m_rows.size() && m_rows[shownGone]->id < keepFrom)
        ++shownGone;
    if (shownGone) {
        beginRemoveRows({}, 0, int(shownGone) - 1);
        m_rows.erase(m_rows.begin(), m_rows.begin() + std::ptrdiff_t(shownGone));
        endRemoveRows();
    }
    std::size_t gone = 0;
    while (!m_all.empty() && m_all.front().id < keepFrom) {
        m_all.pop_front();
        ++gone;
    }
    return gone;
}

bool TrafficModel::update(const TrafficRow& row) {
    if (m_all.empty() || row.id < m_all.front().id || row.id > m_all.back().id) return false;
    auto pos = std::lower_bound(m_all.begin(), m_all.end(), row.id,
                                [](const TrafficRow& r, std::uint64_t v) { return r.id < v; });
    if (pos == m_all.end() || pos->id != row.id) return false;
    *pos = row;
    if (const int shown = rowOfId(row.id); shown >= 0)
        emit dataChanged(index(shown, 0), index(shown, ColumnCount - 1));
    return true;
}

void TrafficModel::clear() {
    beginResetModel();
    m_rows.clear();
    m_all.clear();
    endResetModel();
}

void TrafficModel::setFilter(
    std::optional<capture::Filter> filter,
    const std::function<std::vector<capture::Exchange>(std::uint64_t, std::size_t)>& details) {
    if (filter && filter->empty()) filter.reset();
    m_filter = std::move(filter);
    ++m_generation;
    beginResetModel();
    m_rows.clear();
    if (!m_filter) {
        for (const auto& r : m_all)
            m_rows.push_back(&r);
    } else {
        std::vector<capture::Exchange> full;
        if (details && !m_all.empty()) full = details(m_all.front().id - 1, m_all.size());
        auto f = full.begin();
        for (const auto& r : m_all) {
            while (f != full.end() && f->id < r.id)
                ++f;
            const bool match =
                f != full.end() && f->id == r.id ? m_filter->matches(*f) : m_filter->matches(r.summary());
            if (match) m_rows.push_back(&r);
        }
    }
    endResetModel();
}

} // namespace portico::ui
