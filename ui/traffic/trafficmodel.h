// TrafficModel: the live exchange table (one compact row per captured exchange, filtered view).
#pragma once

#include <portico/capture/exchange.h>
#include <portico/capture/filter.h>

#include <QAbstractTableModel>

#include <deque>
#include <functional>
#include <optional>
#include <vector>

namespace portico::ui {

/// What the table keeps of an exchange: the columns and the fields the filter language reads
/// (headers and bodies stay in the engine's capture window; the inspector asks for them by id).
struct TrafficRow {
    std::uint64_t id = 0;
    std::int64_t startedUnixNs = 0;
    std::int64_t durationNs = -1;
    std::uint64_t responseBodySize = 0;
    int status = 0;
    capture::Protocol protocol = capture::Protocol::Http1;
    std::uint8_t httpVersion = 11;
    std::uint32_t flags = 0;
    std::string method, scheme, authority, target, vhost, route, client, error;

    static TrafficRow from(const capture::Exchange& e);
    /// An Exchange holding only these fields (for the filter on rows whose details are gone).
    capture::Exchange summary() const;
};

/// Rows are appended in batches (one beginInsertRows per batch, as Wireshark's packet list does),
/// the oldest leave when there are more than maxRows(), and column text is built in data() only for
/// the rows the view paints. The filter hides rows without dropping them; changing it re-filters
/// everything kept.
class TrafficModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Time, Protocol, Method, Host, Path, Status, Size, Duration, Route, ColumnCount };
    static constexpr int kIdRole = Qt::UserRole + 1;
    static constexpr std::size_t kDefaultMaxRows = 100000;

    explicit TrafficModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    /// Adds a batch (ids increasing). Rows the filter rejects are kept but not shown.
    void append(const std::vector<capture::Exchange>& batch);
    /// Adds rows built elsewhere (the feed thread). `matched[i]` is the filter's verdict when
    /// `generation` is filterGeneration(); otherwise the rows are matched here on their summary.
    void appendRows(std::vector<TrafficRow>&& rows, const std::vector<bool>& matched,
                    std::uint64_t generation);
    /// Bumped by every setFilter().
    std::uint64_t filterGeneration() const { return m_generation; }
    const std::optional<capture::Filter>& filter() const { return m_filter; }
    void clear();
    /// Re-filters every kept row. `details` (optional) returns the full records still in the
    /// capture window with id > sinceId, so `header:` terms see headers; other rows are matched on
    /// their summary.
    void setFilter(std::optional<capture::Filter> filter,
                   const std::function<std::vector<capture::Exchange>(std::uint64_t sinceId,
                                                                      std::size_t max)>& details = {});

    /// Replaces the row of `row.id` (if kept) with a newer version of it (a completed record);
    /// false if it is not kept.
    bool update(const TrafficRow& row);

    /// Drops every row with an id below `id` (their records left the capture window): rows and
    /// details leave together. Returns how many rows were dropped.
    std::size_t dropBefore(std::uint64_t id);

    void setMaxRows(std::size_t n) { m_maxRows = n ? n : 1; }
    std::size_t maxRows() const { return m_maxRows; }
    std::size_t totalRows() const { return m_all.size(); } ///< kept, shown or not
    std::uint64_t idAt(int row) const;
    const TrafficRow* rowAt(int row) const;
    int rowOfId(std::uint64_t id) const; ///< -1 when not shown

signals:
    /// Before rows leave (the bound, dropBefore): every id below `keepFrom` goes. Emitted before
    /// beginRemoveRows, so a view can let go of a selected row before the selection moves on.
    void rowsLeaving(std::uint64_t keepFrom);

private:
    void trim();
    void insertShown(std::vector<const TrafficRow*>& shown);

    std::deque<TrafficRow> m_all;         ///< stable addresses: push_back/pop_front only
    std::deque<const TrafficRow*> m_rows; ///< the shown ones, ids increasing
    std::optional<capture::Filter> m_filter;
    std::uint64_t m_generation = 0;
    std::size_t m_maxRows = kDefaultMaxRows;
};

/// "1.2 kB", "3.4 MB" (decimal units, as browsers' network panels show sizes).
QString formatBytes(std::uint64_t bytes);
/// "0.107 ms", "4.42 ms", "12.3 ms", "1.20 s"; "" for -1. The one format of an exchange's total
/// (table, timeline, HAR line).
QString formatDuration(std::int64_t ns);
/// "HTTP/1.1", "h2", "WS", "gRPC".
QString protocolName(capture::Protocol p, std::uint8_t httpVersion);

} // namespace portico::ui
