// The run view's drill-down list and its inspector dialog (samplesview.h).
#include "samplesview.h"

#include "inspector/inspectorwidget.h"
#include "servercontroller.h"

#include <portico/engine/engine.h>
#include <portico/http/ascii.h>
#include <portico/http/url.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include <QDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace portico::ui {

namespace {

const char* failureText(std::uint8_t failure) {
    switch (failure) {
    case 1:
        return "connection reset";
    case 2:
        return "timed out";
    case 3:
        return "protocol error";
    default:
        return "failed";
    }
}

std::uint32_t serverStreamId(const load::Result& r, const load::ExchangeSample& s) {
    return r.options.protocol == load::Protocol::Http2 ? 2 * s.sequence + 1 : s.sequence + 1;
}

bool endsWithPort(std::string_view client, std::uint16_t port) {
    const std::string suffix = ":" + std::to_string(port);
    return client.size() > suffix.size() && client.substr(client.size() - suffix.size()) == suffix;
}

} // namespace

QString ms(std::uint64_t ns) { return QString::number(ns / 1e6, 'f', ns < 10'000'000 ? 3 : 1); }

std::vector<std::size_t> filterSamples(const load::Result& r, const SampleFilter& f) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < r.samples.size(); ++i) {
        const auto& s = r.samples[i];
        if (f.request >= 0 && s.request != std::uint32_t(f.request)) continue;
        bool keep = false;
        switch (f.by) {
        case SampleFilter::By::All:
            keep = true;
            break;
        case SampleFilter::By::Latency:
            keep = s.failure == 0 && s.latencyNs >= std::uint64_t(std::max<std::int64_t>(f.lowNs, 0)) &&
                   s.latencyNs < std::uint64_t(std::max<std::int64_t>(f.highNs, 0));
            break;
        case SampleFilter::By::Completion:
            keep = s.doneNs >= f.lowNs && s.doneNs < f.highNs;
            break;
        case SampleFilter::By::Failed:
            keep = s.failure != 0;
            break;
        }
        if (keep) out.push_back(i);
    }
    return out;
}

namespace {
bool loopbackHost(const std::string& host) {
    return http::iequals(host, "localhost") || host == "::1" || host.rfind("127.", 0) == 0;
}
} // namespace

bool targetsListener(const QStringList& listenerUrls, const std::string& url) {
    http::Url target;
    std::string error;
    if (!http::parseUrl(url, target, error)) return false;
    for (const QString& l : listenerUrls) {
        http::Url listener;
        if (!http::parseUrl(l.toStdString(), listener, error)) continue;
        if (listener.scheme != target.scheme || listener.port != target.port) continue;
        if (listener.host == "0.0.0.0" || listener.host == "::" ||
            http::iequals(listener.host, target.host) ||
            (loopbackHost(target.host) && loopbackHost(listener.host)))
            return true;
    }
    return false;
}

namespace {
bool carriesRequestId(const capture::Exchange& e, const std::string& id) {
    return std::any_of(e.requestHeaders.begin(), e.requestHeaders.end(), [&](const auto& h) {
        return h.value == id && http::iequals(h.name, load::kRequestIdField);
    });
}
} // namespace

capture::Exchange sampleExchange(const load::Result& r, const load::ExchangeSample& s) {
    capture::Exchange e;
    const bool h2 = r.options.protocol == load::Protocol::Http2;
    e.protocol = h2 ? capture::Protocol::Http2 : capture::Protocol::Http1;
    e.httpVersion = h2 ? 20 : 11;
    e.streamId = serverStreamId(r, s);
    e.client = "local port " + std::to_string(s.localPort);
    e.status = s.status;
    if (s.failure) e.error = failureText(s.failure);
    if (s.request < r.options.requests.size()) {
        const auto& spec = r.options.requests[s.request];
        http::Url u;
        std::string error;
        e.method = spec.method;
        if (http::parseUrl(spec.url, u, error)) {
            e.scheme = u.scheme;
            e.authority = u.authority;
            e.target = u.target;
            if (u.tls()) e.alpn = h2 ? "h2" : "http/1.1";
        } else {
            e.target = spec.url;
        }
        const bool hostGiven = std::any_of(spec.headers.begin(), spec.headers.end(), [](const auto& h) {
            return h.first.size() == 4 && (h.first[0] | 0x20) == 'h' && (h.first[1] | 0x20) == 'o' &&
                   (h.first[2] | 0x20) == 's' && (h.first[3] | 0x20) == 't';
        });
        if (!hostGiven && !e.authority.empty()) e.requestHeaders.push_back({"Host", e.authority});
        for (const auto& [name, value] : spec.headers)
            e.requestHeaders.push_back({name, value});
        if (!spec.body.empty())
            e.requestHeaders.push_back({"Content-Length", std::to_string(spec.body.size())});
        if (!s.requestId.empty()) e.requestHeaders.push_back({"X-Request-Id", s.requestId});
        e.requestBody = spec.body;
        e.requestBodySize = spec.body.size();
    }
    if (s.responseHeaders)
        for (const auto& [name, value] : *s.responseHeaders)
            e.responseHeaders.push_back({name, value});
    e.set(capture::Phase::RequestHeaders, s.sentNs);
    e.set(capture::Phase::RequestBodyDone, s.sentNs);
    if (s.firstByteNs >= 0) e.set(capture::Phase::ResponseFirstByte, s.firstByteNs);
    e.set(capture::Phase::ResponseDone, s.doneNs);
    e.startedUnixNs =
        std::chrono::duration_cast<std::chrono::nanoseconds>(r.startedAt.time_since_epoch()).count() +
        s.sentNs;
    return e;
}

std::optional<capture::Exchange> findServerRecord(const engine::Engine& engine, const load::Result& r,
                                                  const load::ExchangeSample& s, std::uint64_t sinceId,
                                                  std::size_t maxScan) {
    if (s.localPort == 0 || s.request >= r.options.requests.size()) return std::nullopt;
    const auto& spec = r.options.requests[s.request];
    http::Url u;
    std::string error;
    const std::string target = http::parseUrl(spec.url, u, error) ? u.target : spec.url;
    const std::uint32_t stream = serverStreamId(r, s);
    const std::int64_t startNs =
        std::chrono::duration_cast<std::chrono::nanoseconds>(r.startedAt.time_since_epoch()).count();
    const std::int64_t sentUnixNs = startNs + s.sentNs, doneUnixNs = startNs + s.doneNs;
    // Records are numbered in completion order: the one sought completed (on the server's wall
    // clock) a little before the generator saw the response. Find the first record that completed
    // kBeforeNs before that by bisection over the ids, then scan forward until kAfterNs past it.
    constexpr std::int64_t kBeforeNs = 500'000'000, kAfterNs = 250'000'000, kStartWindowNs = 2'000'000'000;
    auto doneWall = [](const capture::Exchange& e) {
        return e.startedUnixNs + std::max<std::int64_t>(0, e.durationNs());
    };
    std::uint64_t lo = sinceId, hi = std::max(sinceId, engine.lastCapturedId());
    while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        const auto first = engine.recentExchanges(mid, 1); // the first record with id > mid
        if (first.empty() || doneWall(first.front()) >= doneUnixNs - kBeforeNs)
            hi = mid;
        else
            lo = mid + 1;
    }
    std::optional<capture::Exchange> best;
    std::int64_t bestGap = kStartWindowNs + 1;
    std::uint64_t next = lo;
    for (std::size_t scanned = 0; scanned < maxScan;) {
        auto batch = engine.recentExchanges(next, std::min<std::size_t>(1000, maxScan - scanned));
        if (batch.empty()) break;
        scanned += batch.size();
        next = batch.back().id;
        bool past = false;
        for (auto& e : batch) {
            if (doneWall(e) > doneUnixNs + kAfterNs) past = true;
            if (!s.requestId.empty()) { // the id the request carried names it alone
                if (!carriesRequestId(e, s.requestId)) continue;
                best = std::move(e);
                break;
            }
            if (e.streamId != stream || e.method != spec.method || e.target != target ||
                !endsWithPort(e.client, s.localPort))
                continue;
            // The same port and number on a later connection (ports are reused) started elsewhere.
            const std::int64_t gap = std::llabs(e.startedUnixNs - sentUnixNs);
            if (gap < bestGap) {
                bestGap = gap;
                best = std::move(e);
            }
        }
        if (past || (best && !s.requestId.empty())) break;
    }
    if (best) {
        // The window's copy may lack the body when it came from the session file; exchange() has it.
        if (auto full = engine.exchange(best->id)) return full;
    }
    return best;
}

SamplesView::SamplesView(ServerController* server, QWidget* parent) : QWidget(parent), m_server(server) {
    m_title = new QLabel;
    m_title->setObjectName("loadSamplesTitle");
    m_title->setWordWrap(true);
    m_all = new QPushButton(tr("All"));
    m_all->setObjectName("loadSamplesAll");
    m_all->setToolTip(tr("List every sampled request of the run"));
    m_failed = new QPushButton(tr("Failed"));
    m_failed->setObjectName("loadSamplesFailed");
    m_failed->setToolTip(
        tr("List the failed requests (the run keeps the first %1)").arg(load::Result::kMaxFailedSamples));
    connect(m_all, &QPushButton::clicked, this, [this] {
        select({SampleFilter::By::All, 0, 0, m_filter.request}, tr("all"));
    });
    connect(m_failed, &QPushButton::clicked, this, [this] {
        select({SampleFilter::By::Failed, 0, 0, m_filter.request}, tr("failed"));
    });

    m_table = new QTableWidget(0, 8);
    m_table->setObjectName("loadSamples");
    m_table->setHorizontalHeaderLabels({tr("Done s"), tr("Request"), tr("Status"), tr("Latency ms"),
                                        tr("Waited ms"), tr("Conn"), tr("# on conn"), tr("Client port")});
    m_table->horizontalHeaderItem(4)->setToolTip(
        tr("Open model: from the schedule's send time to the actual send (no free connection)"));
    m_table->horizontalHeaderItem(6)->setToolTip(
        tr("The request's number on its connection (0-based): with the client port it finds the "
           "server's record"));
    m_table->setToolTip(tr("Double-click a request to open it in the inspector"));
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    connect(m_table, &QTableWidget::cellActivated, this, [this](int row, int) { openRow(row); });

    auto header = new QHBoxLayout;
    header->setContentsMargins(0, 0, 0, 0);
    header->addWidget(m_title, 1);
    header->addWidget(m_all);
    header->addWidget(m_failed);
    auto layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(header);
    layout->addWidget(m_table, 1);
    setRun(nullptr, 0);
}

SamplesView::~SamplesView() = default;

void SamplesView::setRun(std::shared_ptr<const load::Result> run, std::uint64_t captureFromId) {
    m_run = std::move(run);
    m_captureFrom = captureFromId;
    m_filter = {};
    m_what = tr("all");
    fill();
}

void SamplesView::select(const SampleFilter& f, const QString& what) {
    m_filter = f;
    m_what = what;
    fill();
}

void SamplesView::setRequest(int request) {
    m_filter.request = request;
    fill();
}

void SamplesView::fill() {
    fillRows();
    emit selectionChanged();
}

void SamplesView::fillRows() {
    m_table->setRowCount(0);
    m_rows.clear();
    std::size_t failed = 0;
    if (m_run)
        for (const auto& s : m_run->samples)
            failed +=
                s.failure != 0 && (m_filter.request < 0 || s.request == std::uint32_t(m_filter.request));
    m_failed->setText(tr("Failed (%1)").arg(QLocale().toString(qulonglong(failed))));
    m_failed->setEnabled(failed > 0);
    m_all->setEnabled(m_run != nullptr);
    if (!m_run) {
        m_title->setText(tr("Sampled requests: none (no run yet)"));
        return;
    }
    if (!m_run->options.samples || m_run->samples.empty()) {
        m_title->setText(m_run->options.samples ? tr("Sampled requests: none (nothing was measured)")
                                                : tr("Sampled requests: the run kept none (samples off)"));
        return;
    }
    m_rows = filterSamples(*m_run, m_filter);
    const QString kind =
        m_filter.request >= 0 && std::size_t(m_filter.request) < m_run->options.requests.size()
            ? tr(" of %1").arg(
                  QString::fromStdString(m_run->options.requests[std::size_t(m_filter.request)].method + " " +
                                         m_run->options.requests[std::size_t(m_filter.request)].url))
            : QString();
    QString title = tr("Sampled requests%1, %2: %3").arg(kind, m_what).arg(m_rows.size());
    if (m_rows.empty() && m_filter.by != SampleFilter::By::All)
        title += tr(" (the run keeps %1 per latency bin and %2 per second; none fell here)")
                     .arg(load::Result::kSamplesPerBin)
                     .arg(load::Result::kSamplesPerSecond);
    else
        title +=
            tr(" — click a histogram bar or a throughput point to narrow, double-click a row to inspect");
    m_title->setText(title);
    m_table->setRowCount(int(m_rows.size()));
    for (int row = 0; row < int(m_rows.size()); ++row) {
        const auto& s = m_run->samples[m_rows[std::size_t(row)]];
        QString request = QStringLiteral("#%1").arg(s.request);
        if (s.request < m_run->options.requests.size()) {
            const auto& spec = m_run->options.requests[s.request];
            http::Url u;
            std::string error;
            request = QString::fromStdString(spec.method + " " +
                                             (http::parseUrl(spec.url, u, error) ? u.target : spec.url));
        }
        const QStringList cells{QString::number(s.doneNs / 1e9, 'f', 3),
                                request,
                                s.failure ? QString::fromLatin1(failureText(s.failure))
                                          : QString::number(s.status),
                                ms(s.latencyNs),
                                ms(std::uint64_t(std::max<std::int64_t>(0, s.sentNs - s.intendedNs))),
                                QString::number(s.connection),
                                QString::number(s.sequence),
                                s.localPort ? QString::number(s.localPort) : QStringLiteral("-")};
        for (int col = 0; col < cells.size(); ++col) {
            auto item = new QTableWidgetItem(cells[col]);
            if (col != 1) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (col == 2 && (s.failure || s.status >= 500)) item->setForeground(QColor(192, 57, 43));
            m_table->setItem(row, col, item);
        }
    }
}

bool SamplesView::openRow(int row) {
    if (!m_run || row < 0 || row >= int(m_rows.size())) return false;
    const auto& s = m_run->samples[m_rows[std::size_t(row)]];
    std::optional<capture::Exchange> record;
    if (m_server) record = findServerRecord(m_server->engine(), *m_run, s, m_captureFrom);
    m_openedServer = record.has_value();
    if (!m_dialog) {
        m_dialog = new QDialog(this);
        m_dialog->setObjectName("loadSampleInspector");
        m_dialog->resize(900, 640);
        m_source = new QLabel;
        m_source->setObjectName("loadSampleSource");
        m_source->setWordWrap(true);
        m_inspector = new InspectorWidget(m_server);
        auto layout = new QVBoxLayout(m_dialog);
        layout->addWidget(m_source);
        layout->addWidget(m_inspector, 1);
    }
    QString where = tr("the generator's connection %1, its request %2 there counting from 0; the server "
                       "numbers its own connections and counts requests from 1; client port %3")
                        .arg(s.connection)
                        .arg(s.sequence)
                        .arg(s.localPort);
    if (!s.requestId.empty()) where += tr("; X-Request-Id %1").arg(QString::fromStdString(s.requestId));
    if (record) {
        m_dialog->setWindowTitle(tr("Sampled request — server record #%1").arg(record->id));
        const std::int64_t serverNs = record->durationNs();
        m_source->setText(
            tr("The server's own record of this request (%1), with its timeline. The generator "
               "measured %2 ms; the server took %3 ms from its first byte to its last, the rest "
               "was spent outside it (queues, network, the client).")
                .arg(where, ms(s.latencyNs),
                     serverNs >= 0 ? ms(std::uint64_t(serverNs)) : QStringLiteral("?")));
        m_inspector->showExchange(*record);
    } else {
        m_dialog->setWindowTitle(tr("Sampled request — as the generator saw it"));
        m_source->setText(tr("As the generator saw it (%1): the server's record was not found (capture off, "
                             "another server, or the record left the capture).")
                              .arg(where));
        m_inspector->showExchange(sampleExchange(*m_run, s));
    }
    m_dialog->show();
    m_dialog->raise();
    return true;
}

} // namespace portico::ui
