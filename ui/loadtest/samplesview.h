// The run view's drill-down: the sampled exchanges (load::Result::samples) under a histogram bar, a
// second of the throughput plot, or the failed ones, listed in a table; selecting one opens it in the
// inspector — the server's own capture record when the run's target was this app's server and
// capture was on, else the exchange as the generator saw it.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/load/result.h>

#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

class QDialog;
class QLabel;
class QPushButton;
class QTableWidget;

namespace portico::engine {
class Engine;
}

namespace portico::ui {

class InspectorWidget;
class ServerController;

/// Which of a run's samples to list.
struct SampleFilter {
    enum class By : std::uint8_t {
        All,        ///< every sample
        Latency,    ///< completed samples with latencyNs in [lowNs, highNs)
        Completion, ///< completed or failed samples with doneNs in [lowNs, highNs)
        Failed,     ///< failed samples
    };
    By by = By::All;
    std::int64_t lowNs = 0;  ///< ns (latency, or steady time since the end of the warm-up)
    std::int64_t highNs = 0; ///< ns, exclusive
    int request = -1;        ///< only samples of Options::requests[request]; -1 for every kind
};

/// A duration in ns as milliseconds for the Load test tab's tables and labels: 3 decimals below
/// 10 ms, 1 above ("0.358", "24.7").
QString ms(std::uint64_t ns);

/// Indexes into `r.samples` that `f` keeps, in the order of r.samples (by completion time).
std::vector<std::size_t> filterSamples(const load::Result& r, const SampleFilter& f);

/// A sample as the generator saw it, as a capture record the inspector shows: method, scheme,
/// authority, target, request fields and body from Options::requests[s.request] (Host from the
/// URL unless the request sets one); status; `error` "connection reset", "timed out" or "protocol
/// error" for a failed one; protocol Http1 (HTTP/1.1) or Http2 as Options::protocol; client
/// "local port N"; responseHeaders the sample's (when it kept them); streamId numbered as the server numbers
/// it (HTTP/1.1 sequence + 1, HTTP/2 2 × sequence + 1); phases RequestHeaders = sentNs, ResponseFirstByte =
/// firstByteNs (when known) and ResponseDone = doneNs (steady ns from the end of the warm-up), startedUnixNs
/// = Result::startedAt + sentNs. `id` 0 (not a capture record). A sample whose request index is out of range
/// gives a record with only the times.
capture::Exchange sampleExchange(const load::Result& r, const load::ExchangeSample& s);

/// Whether `url` goes to one of `listenerUrls` (ServerController::urls(), "http://127.0.0.1:8080/"):
/// the same scheme and port, and a host that is the listener's, a loopback name or address
/// (localhost, 127.0.0.0/8, ::1), or any host when the listener is a wildcard (0.0.0.0, ::). The
/// load page then sends request ids (load::Options::requestId) so findServerRecord finds records
/// by id. False for a URL that does not parse.
bool targetsListener(const QStringList& listenerUrls, const std::string& url);

/// The server's own capture record of `s`, when the run went to a server of this process with
/// capture on: among records with id > `sinceId` that completed (server wall clock) from 0.5 s
/// before to 0.25 s after the generator saw the response — found by bisection over the ids, which
/// follow completion order, then at most `maxScan` records read — the one whose `x-request-id`
/// field is s.requestId when the run sent ids (Options::requestId). A run without them falls back
/// to the one whose client port is s.localPort, whose stream id is the sample's (as
/// sampleExchange numbers it), with the sample's method and target, started within 2 s of the
/// sample's send time (a later connection may reuse the port), the closest in time if several.
/// nullopt when none is. About 20 lookups and the records of that 0.75 s, so it runs on the UI
/// thread at a click.
std::optional<capture::Exchange> findServerRecord(const engine::Engine& engine, const load::Result& r,
                                                  const load::ExchangeSample& s, std::uint64_t sinceId,
                                                  std::size_t maxScan = 100'000);

/// A title, the buttons "All" and "Failed (N)", and the table (object name "loadSamples": done
/// time s, request, status, latency ms, waited ms, connection, request on it, client port). Double
/// click or Enter on a row opens it (openRow).
class SamplesView : public QWidget {
    Q_OBJECT

public:
    explicit SamplesView(ServerController* server, QWidget* parent = nullptr);
    ~SamplesView() override;

    /// The run whose samples are listed (null: none); `captureFromId` is the last capture id before
    /// it started (findServerRecord's `sinceId`). Lists them all.
    void setRun(std::shared_ptr<const load::Result> run, std::uint64_t captureFromId);
    /// Lists the samples `f` keeps; `what` names the selection in the title ("latency 1.2–1.4 ms").
    void select(const SampleFilter& f, const QString& what);
    /// Keeps the selection but lists only samples of Options::requests[request] (-1: every kind).
    void setRequest(int request);
    const SampleFilter& filter() const { return m_filter; }
    QTableWidget* table() const { return m_table; }
    QLabel* title() const { return m_title; }

    /// Opens the sample of table row `row` in the inspector dialog (created on first use, reused):
    /// the server's record when findServerRecord finds one, else sampleExchange. False for a row
    /// that does not exist.
    bool openRow(int row);
    /// The dialog's inspector; null until a row was opened.
    InspectorWidget* inspector() const { return m_inspector; }
    QDialog* inspectorDialog() const { return m_dialog; }
    /// The last openRow's source: true when it showed the server's record.
    bool openedServerRecord() const { return m_openedServer; }

signals:
    /// The list was filled again (a new run, selection or request kind).
    void selectionChanged();

private:
    void fill(); ///< fillRows, then selectionChanged
    void fillRows();

    ServerController* m_server;
    std::shared_ptr<const load::Result> m_run;
    std::uint64_t m_captureFrom = 0;
    SampleFilter m_filter;
    QString m_what;
    std::vector<std::size_t> m_rows; ///< sample index per table row
    QLabel* m_title = nullptr;
    QPushButton* m_all = nullptr;
    QPushButton* m_failed = nullptr;
    QTableWidget* m_table = nullptr;
    QDialog* m_dialog = nullptr;
    QLabel* m_source = nullptr;
    InspectorWidget* m_inspector = nullptr;
    bool m_openedServer = false;
};

} // namespace portico::ui
