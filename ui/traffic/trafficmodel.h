// TrafficModel: the live exchange table (one compact row per captured exchange, filtered and
// sorted view). Sized for a million rows: a row is about 90 bytes plus its path.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/capture/filter.h>

#include <QAbstractTableModel>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace portico::ui {

/// What the table keeps of an exchange: the columns and the fields the filter language reads
/// (headers and bodies stay in the engine's window and session file; the inspector asks for them
/// by id). The feed hands rows over in this form; the model keeps them compacted.
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

/// Rows are appended in batches (one beginInsertRows per batch, as Wireshark's packet list does)
/// and leave when the engine no longer has their records (dropBefore) or past maxRows(); column
/// text is built in data() only for the rows the view paints. The filter hides rows without
/// dropping them; changing it re-filters everything kept. sort() orders the shown rows by any
/// column (ties by id); new rows are merged into that order as they arrive.
class TrafficModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Time, Protocol, Method, Host, Path, Status, Size, Duration, Route, ColumnCount };
    static constexpr int kIdRole = Qt::UserRole + 1;
    /// A bound for memory only: rows normally leave with their records (dropBefore), and the
    /// session file's size cap decides how many that is.
    static constexpr std::size_t kDefaultMaxRows = 2'000'000;

    explicit TrafficModel(QObject* parent = nullptr);
    ~TrafficModel() override;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    /// Orders the shown rows by `column` (Time = capture order); ties keep id order.
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
    int sortColumn() const { return m_sortColumn; }
    Qt::SortOrder sortOrder() const { return m_sortOrder; }

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
    /// Source of full records (headers) for filters that read them: records with id > sinceId, in
    /// id order, at most max (bodies not needed).
    using Details = std::function<std::vector<capture::Exchange>(std::uint64_t sinceId, std::size_t max)>;
    /// Re-filters every kept row. With `details`, `header:` terms see the headers of the records
    /// it still has (read in chunks of 20,000); other rows are matched on their summary.
    void setFilter(std::optional<capture::Filter> filter, const Details& details = {});

    /// Replaces the row of `row.id` (if kept) with a newer version of it (a completed record);
    /// false if it is not kept. The path is not changed.
    bool update(const TrafficRow& row);
    /// update() for a batch, with one re-sort of the changed rows.
    void updateRows(const std::vector<TrafficRow>& rows);

    /// Drops every row with an id below `id` (their records are gone from the engine): rows and
    /// details leave together. Returns how many rows were dropped.
    std::size_t dropBefore(std::uint64_t id);

    void setMaxRows(std::size_t n) { m_maxRows = n ? n : 1; }
    std::size_t maxRows() const { return m_maxRows; }
    std::size_t totalRows() const { return m_all.size(); } ///< kept, shown or not
    std::uint64_t idAt(int row) const;
    /// The row shown at `row`, rebuilt as a TrafficRow; nullopt outside the table.
    std::optional<TrafficRow> rowAt(int row) const;
    int rowOfId(std::uint64_t id) const; ///< -1 when not shown
    /// Approximate bytes the kept rows use (rows, paths, strings), for the volume benchmark.
    std::size_t memoryBytes() const;

signals:
    /// Before rows leave (maxRows, dropBefore): every id below `keepFrom` goes. Emitted before
    /// the rows are removed, so a view can let go of a selected row before the selection moves.
    void rowsLeaving(std::uint64_t keepFrom);

private:
    // One kept row: numbers, the path in a FIFO arena, the other strings interned (methods, hosts,
    // routes and clients repeat).
    struct Row {
        std::uint64_t id = 0;
        std::int64_t startedUnixNs = 0;
        std::int64_t durationNs = -1;
        std::uint64_t responseBodySize = 0;
        const char* target = nullptr;
        std::uint32_t targetLength = 0;
        std::uint32_t chunk = 0; ///< arena chunk of `target`
        std::int32_t status = 0;
        std::uint32_t flags = 0;
        std::uint32_t method = 0, scheme = 0, authority = 0, vhost = 0, route = 0, client = 0, error = 0;
        std::uint8_t protocol = 0;
        std::uint8_t httpVersion = 11;
    };
    std::uint32_t intern(const std::string& s);
    const std::string& str(std::uint32_t i) const { return m_strings[i]; }
    std::string_view target(const Row& r) const { return {r.target, r.targetLength}; }
    void storeTarget(Row& r, std::string_view s);
    void freeChunks();
    Row compact(const TrafficRow& t);
    Row* find(std::uint64_t id);                    ///< the kept row of `id`, or null
    void complete(Row& r, const TrafficRow& newer); ///< the fields a newer version changes
    template <class Out>
    void copyFields(const Row& r, Out& out) const; ///< into a TrafficRow or a capture::Exchange
    TrafficRow expand(const Row& r) const;
    bool matches(const Row& r) const;
    bool less(const Row* a, const Row* b) const; ///< the current sort
    bool naturalOrder() const { return m_sortColumn == Time; }
    void insertShown(std::vector<const Row*>& shown);
    /// Moves the shown rows under a layout change that keeps selections on their rows.
    void relayout(const std::function<void()>& change);
    void trim();

    std::deque<Row> m_all;          ///< stable addresses: push_back/pop_front only, ids increasing
    std::vector<const Row*> m_rows; ///< the shown ones, in the sort order
    std::vector<std::string> m_strings;
    std::unordered_map<std::string, std::uint32_t> m_stringIndex;
    struct Chunk {
        std::unique_ptr<char[]> bytes;
        std::size_t size = 0, used = 0;
    };
    std::deque<Chunk> m_chunks;
    std::uint32_t m_firstChunk = 0; ///< number of m_chunks.front()
    std::optional<capture::Filter> m_filter;
    mutable capture::Exchange m_scratch; ///< reused by matches(), so the filter allocates nothing
    std::uint64_t m_generation = 0;
    std::size_t m_maxRows = kDefaultMaxRows;
    int m_sortColumn = Time;
    Qt::SortOrder m_sortOrder = Qt::AscendingOrder;
};

/// "1.2 kB", "3.4 MB" (decimal units, as browsers' network panels show sizes).
QString formatBytes(std::uint64_t bytes);
/// "0.107 ms", "4.42 ms", "12.3 ms", "1.20 s"; "" for -1. The one format of an exchange's total
/// (table, timeline, HAR line).
QString formatDuration(std::int64_t ns);
/// "HTTP/1.1", "h2", "WS", "gRPC".
QString protocolName(capture::Protocol p, std::uint8_t httpVersion);

} // namespace portico::ui
