// InspectorWidget: filling the panes from an Exchange; resend (engine/jobs.h) on a worker thread.
#include "inspectorwidget.h"

#include "bodyview.h"
#include "editresenddialog.h"
#include "jsonpretty.h"
#include "servercontroller.h"
#include "textdiff.h"
#include "timelinewidget.h"
#include "traffic/trafficmodel.h"

#include <portico/capture/copy_as.h>
#include <portico/capture/har.h>
#include <portico/engine/jobs.h>
#include <portico/http/message.h>
#include <portico/tls/local_ca.h>

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QStringDecoder>
#include <QSyntaxHighlighter>
#include <QTabWidget>
#include <QTableWidget>
#include <QThread>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <filesystem>

namespace portico::ui {

namespace {

QString qs(const std::string& s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QString opcodeName(std::uint8_t op) {
    switch (op) {
    case 1:
        return QStringLiteral("text");
    case 2:
        return QStringLiteral("binary");
    case 8:
        return QStringLiteral("close");
    case 9:
        return QStringLiteral("ping");
    case 10:
        return QStringLiteral("pong");
    case 0:
        return QStringLiteral("room event"); // not an RFC 6455 opcode: the ws capture's join/leave marker
    default:
        return QString::number(op);
    }
}

QTreeWidgetItem* section(QTreeWidget* tree, const QString& title) {
    auto item = new QTreeWidgetItem(tree, {title});
    QFont f = item->font(0);
    f.setBold(true);
    item->setFont(0, f);
    item->setFirstColumnSpanned(true);
    item->setExpanded(true);
    return item;
}

void addPair(QTreeWidgetItem* parent, const QString& name, const QString& value) {
    auto item = new QTreeWidgetItem(parent, {name, value});
    item->setToolTip(1, value);
}

bool isHttp2(const capture::Exchange& e) {
    return e.protocol == capture::Protocol::Http2 || e.protocol == capture::Protocol::Grpc ||
           e.httpVersion == 20;
}

std::string lowered(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

// HTTP/2 field lists: names lower-case, pseudo-header fields first (`first` in this order, taken
// from the list or else from `built`), then the list's other pseudo-header fields, then the rest.
std::vector<capture::Header> h2Fields(const std::vector<capture::Header>& list,
                                      const std::vector<capture::Header>& built) {
    std::vector<capture::Header> pseudo, regular;
    for (const auto& h : list)
        (h.name.starts_with(':') ? pseudo : regular).push_back({lowered(h.name), h.value});
    std::vector<capture::Header> out;
    for (const auto& b : built) {
        auto it = std::find_if(pseudo.begin(), pseudo.end(), [&](const auto& h) { return h.name == b.name; });
        if (it != pseudo.end()) {
            out.push_back(*it);
            pseudo.erase(it);
        } else if (!b.value.empty()) {
            out.push_back(b);
        }
    }
    out.insert(out.end(), pseudo.begin(), pseudo.end());
    out.insert(out.end(), regular.begin(), regular.end());
    return out;
}

// Printable UTF-8 (tabs and line ends allowed): what the Compare tab diffs by line.
bool diffableText(const std::string& bytes) {
    const QByteArray raw = QByteArray::fromStdString(bytes);
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    const QString text = decoder(raw);
    if (decoder.hasError()) return false;
    return std::none_of(text.begin(), text.end(), [](QChar c) {
        return (c.unicode() < 0x20 && c != '\n' && c != '\r' && c != '\t') || c.unicode() == 0x7f;
    });
}

// The "Changed by rules" tab's body diff: at most this many lines and bytes of each side.
constexpr std::size_t kRulesBodyLines = 1000;
constexpr std::size_t kRulesBodyBytes = 64 * 1024;

// Cuts `text` to its first kRulesBodyLines lines and kRulesBodyBytes bytes (at a line's end when
// there is one, else at a UTF-8 character's start); true when it cut.
bool cutForDiff(std::string& text) {
    std::size_t end = std::min(text.size(), kRulesBodyBytes), lines = 0;
    for (std::size_t i = 0; i < end; ++i)
        if (text[i] == '\n' && ++lines == kRulesBodyLines) {
            end = i + 1;
            break;
        }
    if (end == text.size()) return false;
    // Here 0 < end < text.size(): back to the last line's end, or to a character's first byte.
    if (const std::size_t nl = text.rfind('\n', end - 1); nl != std::string::npos)
        end = nl + 1;
    else
        while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
            --end;
    text.resize(end);
    return true;
}

// Colours the unified diff: removed lines red, added green, hunk headers blue.
class DiffHighlighter : public QSyntaxHighlighter {
public:
    using QSyntaxHighlighter::QSyntaxHighlighter;

protected:
    void highlightBlock(const QString& text) override {
        if (text.startsWith(QLatin1String("---")) || text.startsWith(QLatin1String("+++"))) {
            QTextCharFormat f;
            f.setFontWeight(QFont::Bold);
            setFormat(0, int(text.size()), f);
        } else if (text.startsWith('-') || text.startsWith('+') || text.startsWith(QLatin1String("@@"))) {
            QTextCharFormat f;
            f.setForeground(text.startsWith('-')   ? QColor(0xc0, 0x20, 0x20)
                            : text.startsWith('+') ? QColor(0x1a, 0x7f, 0x37)
                                                   : QColor(0x30, 0x60, 0xc0));
            setFormat(0, int(text.size()), f);
        }
    }
};

} // namespace

InspectorWidget::InspectorWidget(ServerController* server, QWidget* parent)
    : QWidget(parent), m_server(server) {
    m_summary = new QLabel;
    m_summary->setObjectName("inspectorSummary");
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_curl = new QPushButton(tr("Copy as curl"));
    m_curl->setObjectName("inspectorCurl");
    m_curl->setToolTip(tr("Copy a curl command that repeats this request (Ctrl+Shift+C)"));
    m_resend = new QPushButton(tr("Resend"));
    m_resend->setObjectName("inspectorResend");
    m_resend->setToolTip(
        tr("Send this request again to the running server and compare the answers (Ctrl+R)"));
    m_edit = new QPushButton(tr("Edit and resend…"));
    m_edit->setObjectName("inspectorEdit");
    connect(m_curl, &QPushButton::clicked, this, &InspectorWidget::copyAsCurl);
    m_python = new QPushButton(tr("Copy as Python"));
    m_python->setObjectName("inspectorPython");
    m_python->setToolTip(tr("Copy a Python 3 script (standard library only) that repeats this request"));
    connect(m_python, &QPushButton::clicked, this, &InspectorWidget::copyAsPython);
    m_copyMore = new QToolButton;
    m_copyMore->setObjectName("inspectorCopyMore");
    m_copyMore->setText(tr("Copy as…"));
    m_copyMore->setToolTip(tr("Copy this request as JavaScript fetch() or an HTTPie command"));
    m_copyMore->setPopupMode(QToolButton::InstantPopup);
    auto copyMenu = new QMenu(m_copyMore);
    copyMenu->addAction(tr("Copy as fetch (JavaScript)"), this, &InspectorWidget::copyAsFetch)
        ->setObjectName("inspectorCopyFetch");
    copyMenu->addAction(tr("Copy as HTTPie"), this, &InspectorWidget::copyAsHttpie)
        ->setObjectName("inspectorCopyHttpie");
    m_copyMore->setMenu(copyMenu);
    // While a resend waits, the same button cancels it.
    connect(m_resend, &QPushButton::clicked, this, [this] {
        if (m_thread)
            cancelResend();
        else
            resend();
    });
    connect(m_edit, &QPushButton::clicked, this, &InspectorWidget::editAndResend);
    auto bar = new QHBoxLayout;
    bar->addWidget(m_summary, 1);
    bar->addWidget(m_curl);
    bar->addWidget(m_python);
    bar->addWidget(m_copyMore);
    bar->addWidget(m_resend);
    bar->addWidget(m_edit);

    m_headers = new QTreeWidget;
    m_headers->setObjectName("inspectorHeaders");
    m_headers->setColumnCount(2);
    m_headers->setHeaderLabels({tr("Name"), tr("Value")});
    m_headers->setRootIsDecorated(true);
    m_headers->setUniformRowHeights(true);
    m_headers->setAlternatingRowColors(true);
    m_headers->header()->setSectionResizeMode(0, QHeaderView::Interactive);
    m_headers->header()->resizeSection(0, 220);
    m_requestBody = new BodyView;
    m_requestBody->setObjectName("inspectorRequestBody");
    m_responseBody = new BodyView;
    m_responseBody->setObjectName("inspectorResponseBody");
    m_timeline = new TimelineWidget;
    m_phases = new QTableWidget(0, 4);
    m_phases->setObjectName("inspectorPhases");
    m_phases->setHorizontalHeaderLabels({tr("Phase"), tr("At"), tr("Step"), tr("steady_clock (ns)")});
    m_phases->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_phases->verticalHeader()->hide();
    m_phases->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_phases->setAlternatingRowColors(true);
    m_phases->verticalHeader()->setDefaultSectionSize(m_phases->fontMetrics().height() + 6);
    m_harTimings = new QLabel;
    m_harTimings->setObjectName("inspectorHarTimings");
    m_harTimings->setToolTip(tr("The same exchange as HAR timings (what `portico har export` writes)"));
    m_timelinePage = new QWidget;
    auto timelineLayout = new QVBoxLayout(m_timelinePage);
    timelineLayout->setContentsMargins(0, 0, 0, 0);
    timelineLayout->addWidget(m_timeline);
    // The raw steady_clock values matter to few people (matching a record with perf or strace
    // output): behind a toggle, off by default.
    auto rawClock = new QCheckBox(tr("Show raw clock values (steady_clock ns)"));
    rawClock->setObjectName("inspectorRawClock");
    m_phases->setColumnHidden(3, true);
    connect(rawClock, &QCheckBox::toggled, this, [this](bool on) { m_phases->setColumnHidden(3, !on); });
    auto harRow = new QHBoxLayout;
    harRow->addWidget(m_harTimings, 1);
    harRow->addWidget(rawClock);
    timelineLayout->addLayout(harRow);
    timelineLayout->addWidget(m_phases, 1);
    m_messages = new QTableWidget(0, 5);
    m_messages->setObjectName("inspectorMessages");
    m_messages->setHorizontalHeaderLabels(
        {tr("Time"), tr("Direction"), tr("Opcode"), tr("Size"), tr("Data")});
    m_messages->horizontalHeader()->setStretchLastSection(true);
    m_messages->verticalHeader()->hide();
    m_messages->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_messages->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_messages->setSelectionMode(QAbstractItemView::SingleSelection);
    m_messageDetail = new QPlainTextEdit;
    m_messageDetail->setObjectName("inspectorMessageDetail");
    m_messageDetail->setReadOnly(true);
    m_messageDetail->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    auto messagesSplit = new QSplitter(Qt::Vertical);
    messagesSplit->addWidget(m_messages);
    messagesSplit->addWidget(m_messageDetail);
    messagesSplit->setStretchFactor(0, 3);
    messagesSplit->setStretchFactor(1, 2);
    m_messagesPage = messagesSplit;
    connect(m_messages, &QTableWidget::itemSelectionChanged, this, &InspectorWidget::showMessageDetail);
    m_compareSummary = new QLabel;
    m_compareSummary->setObjectName("inspectorCompareSummary");
    m_compare = new QTableWidget(0, 3);
    m_compare->setObjectName("inspectorCompare");
    m_compare->setHorizontalHeaderLabels({tr("What"), tr("Original"), tr("Resent")});
    m_compare->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_compare->verticalHeader()->hide();
    m_compare->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_compareDiff = new QPlainTextEdit;
    m_compareDiff->setObjectName("inspectorCompareDiff");
    m_compareDiff->setReadOnly(true);
    m_compareDiff->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_compareDiff->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    new DiffHighlighter(m_compareDiff->document());
    auto compareSplit = new QSplitter(Qt::Vertical);
    compareSplit->addWidget(m_compare);
    compareSplit->addWidget(m_compareDiff);
    compareSplit->setStretchFactor(0, 1);
    compareSplit->setStretchFactor(1, 3);
    m_comparePage = new QWidget;
    auto compareLayout = new QVBoxLayout(m_comparePage);
    compareLayout->addWidget(m_compareSummary);
    compareLayout->addWidget(compareSplit, 1);

    m_tabs = new QTabWidget;
    m_tabs->setObjectName("inspectorTabs");
    m_tabs->setDocumentMode(true);
    m_rulesDiff = new QPlainTextEdit;
    m_rulesDiff->setObjectName("inspectorRulesDiff");
    m_rulesDiff->setReadOnly(true);
    m_rulesDiff->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_rulesDiff->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    new DiffHighlighter(m_rulesDiff->document());

    m_tabs->addTab(m_headers, tr("Headers"));
    m_tabs->addTab(m_rulesDiff, tr("Changed by rules"));
    m_tabs->addTab(m_requestBody, tr("Request body"));
    m_tabs->addTab(m_responseBody, tr("Response body"));
    m_tabs->addTab(m_timelinePage, tr("Timeline"));
    m_tabs->addTab(m_messagesPage, tr("Messages"));
    m_tabs->addTab(m_comparePage, tr("Compare"));
    m_tabs->setTabVisible(m_tabs->indexOf(m_rulesDiff), false);
    m_tabs->setTabVisible(m_tabs->indexOf(m_messagesPage), false);
    m_tabs->setTabVisible(m_tabs->indexOf(m_comparePage), false);

    auto layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 4, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(m_tabs, 1);
    clear();
}

InspectorWidget::~InspectorWidget() {
    if (!m_thread) return;
    m_cancel->cancel(); // the resend closes its socket and returns at once
    m_thread->wait();
    delete m_thread;
}

QString InspectorWidget::resendTarget() const {
    QString url = m_server ? m_server->firstHttpUrl() : QString();
    while (url.endsWith('/'))
        url.chop(1);
    return url;
}

void InspectorWidget::clear(const QString& message) {
    m_exchange.reset();
    m_resent.reset();
    m_summary->setText(message.isEmpty() ? tr("Select an exchange to inspect it") : message);
    m_headers->clear();
    m_requestBody->clear();
    m_responseBody->clear();
    m_timeline->clear();
    m_phases->setRowCount(0);
    m_harTimings->clear();
    m_messages->setRowCount(0);
    m_messageTexts.clear();
    m_messageDetail->clear();
    m_rulesDiff->clear();
    m_tabs->setTabVisible(m_tabs->indexOf(m_rulesDiff), false);
    m_tabs->setTabVisible(m_tabs->indexOf(m_messagesPage), false);
    m_tabs->setTabVisible(m_tabs->indexOf(m_comparePage), false);
    updateActions();
}

void InspectorWidget::showExchange(const capture::Exchange& e) {
    const bool same = m_exchange && m_exchange->id == e.id;
    m_exchange = e;
    if (!same) m_resent.reset();
    QString status = e.status ? QString::number(e.status) : tr("no response");
    if (!e.error.empty()) status += QStringLiteral(" (%1)").arg(qs(e.error));
    m_summary->setText(QStringLiteral("<b>#%1</b> %2 %3 → <b>%4</b> · %5 · %6")
                           .arg(e.id)
                           .arg(qs(e.method).toHtmlEscaped(), qs(e.url()).toHtmlEscaped(),
                                status.toHtmlEscaped(), formatDuration(e.durationNs()),
                                formatBytes(e.responseBodySize)));
    fillHeaders(e);
    const QString rulesDiff = rulesDiffText(e);
    m_rulesDiff->setPlainText(rulesDiff);
    m_tabs->setTabVisible(m_tabs->indexOf(m_rulesDiff), !rulesDiff.isEmpty());
    m_requestBody->setBody(e.requestBody, e.requestBodySize,
                           qs(std::string(e.requestHeader("content-type"))));
    m_responseBody->setBody(e.responseBody, e.responseBodySize,
                            qs(std::string(e.responseHeader("content-type"))));
    m_timeline->setExchange(e);
    fillPhases(e);
    fillMessages(e);
    if (same && m_resent)
        showCompare();
    else
        m_tabs->setTabVisible(m_tabs->indexOf(m_comparePage), false);
    updateActions();
}

void InspectorWidget::fillHeaders(const capture::Exchange& e) {
    m_headers->clear();
    QTreeWidgetItem* general = section(m_headers, tr("General"));
    addPair(general, tr("URL"), qs(e.url()));
    addPair(general, tr("Protocol"),
            protocolName(e.protocol, e.httpVersion) +
                (e.tlsVersion.empty() ? QString() : QStringLiteral(" · %1").arg(qs(e.tlsVersion))) +
                (e.alpn.empty() ? QString() : QStringLiteral(" · ALPN %1").arg(qs(e.alpn))));
    addPair(general, tr("Client"),
            e.clientProcess.empty() ? qs(e.client)
                                    : tr("%1 · process %2").arg(qs(e.client), qs(e.clientProcess)));
    if (e.source != capture::Source::Server) {
        static const char* const kSources[] = {
            QT_TR_NOOP("server"), QT_TR_NOOP("forward proxy (http:// request)"),
            QT_TR_NOOP("intercepted (decrypted inside CONNECT)"), QT_TR_NOOP("tunnel (bytes passed unread)")};
        addPair(general, tr("Source"), tr(kSources[static_cast<int>(e.source)]));
    }
    if (!e.upstreamAddress.empty() || !e.upstreamTlsVersion.empty())
        addPair(
            general, tr("Upstream"),
            (e.upstreamAddress.empty() ? tr("pooled connection") : qs(e.upstreamAddress)) +
                (e.upstreamTlsVersion.empty() ? QString()
                                              : QStringLiteral(" · %1").arg(qs(e.upstreamTlsVersion))) +
                (e.upstreamAlpn.empty() ? QString() : QStringLiteral(" · ALPN %1").arg(qs(e.upstreamAlpn))));
    addPair(general, tr("Vhost / route"), QStringLiteral("%1 / %2").arg(qs(e.vhost), qs(e.route)));
    if (!e.rules.empty()) {
        QStringList rules;
        for (const auto& r : e.rules)
            rules << qs(r);
        addPair(general, tr("Rules"), rules.join(QStringLiteral(", ")));
    }
    // The top 16 bits of a connection id are the worker's index.
    addPair(general, tr("Connection"),
            tr("worker %1 · connection %2 · %3 %4")
                .arg(e.connectionId >> 48)
                .arg(e.connectionId & ((std::uint64_t(1) << 48) - 1))
                .arg(e.protocol == capture::Protocol::Http2 || e.protocol == capture::Protocol::Grpc
                         ? tr("stream")
                         : tr("request"))
                .arg(e.streamId));
    if (e.protocol == capture::Protocol::Grpc) {
        const int code = e.grpcStatus();
        const std::string message = e.grpcMessage();
        addPair(general, tr("gRPC status"),
                (code < 0 ? tr("none (the call did not end with a status)") : QString::number(code)) +
                    (message.empty() ? QString() : QStringLiteral(" · %1").arg(qs(message))));
    }
    if (e.flags & capture::kHeadersTruncated)
        addPair(general, tr("Note"), tr("headers were cut to fit the record"));

    // HTTP/1.x: the head's bytes as received / sent; HTTP/2: the HPACK-decoded size (name and
    // value bytes of every field, pseudo-header fields included). 0: not recorded (an old or
    // imported record).
    const bool h2 = isHttp2(e);
    auto title = [&](const QString& what, std::size_t count, std::uint64_t size) {
        if (!size) return tr("%1 (%2)").arg(what).arg(count);
        return h2 ? tr("%1 (%2, %3 HPACK-decoded)").arg(what).arg(count).arg(formatBytes(size))
                  : tr("%1 (%2, %3)").arg(what).arg(count).arg(formatBytes(size));
    };
    auto fill = [](QTreeWidgetItem* parent, const std::vector<capture::Header>& list) {
        for (const auto& h : list)
            addPair(parent, qs(h.name), qs(h.value));
    };
    const std::vector<capture::Header> requestFields = requestHeadersAsSent(e);
    fill(section(m_headers, title(tr("Request headers"), requestFields.size(), e.requestHeadersSize)),
         requestFields);
    if (!e.requestTrailers.empty())
        fill(section(m_headers, tr("Request trailers")),
             h2 ? h2Fields(e.requestTrailers, {}) : e.requestTrailers);
    const std::vector<capture::Header> responseFields = responseHeadersAsSent(e);
    fill(section(m_headers, title(tr("Response headers"), responseFields.size(), e.responseHeadersSize)),
         responseFields);
    if (!e.responseTrailers.empty())
        fill(section(m_headers, tr("Response trailers")),
             h2 ? h2Fields(e.responseTrailers, {}) : e.responseTrailers);
}

std::vector<capture::Header> InspectorWidget::requestHeadersAsSent(const capture::Exchange& e) {
    if (!isHttp2(e)) return e.requestHeaders;
    // RFC 9113 §8.3.1. The record keeps :authority in `authority`, which is Host's value when the
    // client sent Host instead: then there was no :authority on the wire.
    const bool hostField = std::any_of(e.requestHeaders.begin(), e.requestHeaders.end(),
                                       [](const auto& h) { return lowered(h.name) == "host"; });
    return h2Fields(e.requestHeaders, {{":method", e.method},
                                       {":scheme", e.scheme},
                                       {":authority", hostField ? std::string() : e.authority},
                                       {":path", e.target}});
}

std::vector<capture::Header> InspectorWidget::responseHeadersAsSent(const capture::Exchange& e) {
    if (!isHttp2(e)) return e.responseHeaders;
    return h2Fields(e.responseHeaders, {{":status", e.status ? std::to_string(e.status) : std::string()}});
}

QString InspectorWidget::bodyDiff(const capture::Exchange& before, const capture::Exchange& after) {
    if (!diffableText(before.responseBody) || !diffableText(after.responseBody)) return {};
    std::string a = before.responseBody, b = after.responseBody;
    // Both JSON: re-indented as sent, so a one-line body differs line by line.
    if (isJson(a) && isJson(b)) {
        const JsonPretty pa = prettyPrintJson(a), pb = prettyPrintJson(b);
        if (pa.ok && pb.ok) {
            a = pa.text + "\n";
            b = pb.text + "\n";
        }
    }
    auto label = [](const char* what, const capture::Exchange& e) {
        std::string l = std::string(what) + " (" + std::to_string(e.responseBodySize) + " bytes";
        if (e.responseBody.size() < e.responseBodySize)
            l += ", first " + std::to_string(e.responseBody.size()) + " captured";
        return l + ")";
    };
    const TextDiff d = unifiedDiff(a, b, label("original", before), label("resent", after));
    if (!d.ok || d.same) return {};
    return qs(d.text);
}

QString InspectorWidget::rulesDiffText(const capture::Exchange& e) {
    // Both sides as "name: value" lines, names lower-cased (HTTP/2 sends them so); the sent side
    // without pseudo-header fields and without the fields the connection writes itself (Date,
    // Server, framing), which no rule changes and the original block may not hold.
    auto lower = [](std::string_view name) {
        std::string out(name);
        for (char& c : out)
            c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
        return out;
    };
    auto side = [&](const std::string& original, const std::vector<capture::Header>& sent,
                    const QString& what) -> QString {
        if (original.empty()) return {};
        std::string before;
        std::vector<std::string> names;
        http::forEachFieldLine(original, [&](std::string_view n, std::string_view v) {
            names.push_back(lower(n));
            before.append(names.back()).append(": ").append(v).append("\n");
        });
        std::string after;
        for (const auto& h : sent) {
            const std::string name = lower(h.name);
            const bool own = name == "date" || name == "server" || name == "content-length" ||
                             name == "transfer-encoding" || name == "connection" || name == "keep-alive";
            if (name.starts_with(':') || (own && std::find(names.begin(), names.end(), name) == names.end()))
                continue;
            after.append(name).append(": ").append(h.value).append("\n");
        }
        const TextDiff d = unifiedDiff(before, after, tr("%1 before rules").arg(what).toStdString(),
                                       tr("%1 as sent").arg(what).toStdString());
        if (!d.ok) return tr("%1: too many lines to compare").arg(what) + '\n';
        if (d.same) return tr("%1: no differences").arg(what) + '\n';
        return qs(d.text);
    };
    // A body a replace_body rewrote: a line diff of the body before the rules and as sent (the
    // captured prefixes, JSON re-indented first as the Compare tab does), each cut to its first
    // kRulesBodyLines lines or kRulesBodyBytes bytes with a note; binary bodies are only counted.
    auto bodySide = [&](const std::string& original, const std::string& sent, std::uint64_t sentSize,
                        const QString& what) -> QString {
        if (original.empty()) return {};
        QString notes;
        if ((e.flags & capture::kOriginalBodyTruncated) || sent.size() < sentSize)
            notes += tr("%1: the captured prefixes compared (capture.body_bytes)").arg(what) + '\n';
        if (!diffableText(original) || !diffableText(sent))
            return notes +
                   tr("%1: binary, not compared (%2 bytes captured before rules, %3 as sent)")
                       .arg(what)
                       .arg(original.size())
                       .arg(sent.size()) +
                   '\n';
        std::string before = original, after = sent;
        if (isJson(before) && isJson(after)) {
            const JsonPretty pb = prettyPrintJson(before), pa = prettyPrintJson(after);
            if (pb.ok && pa.ok) {
                before = pb.text + "\n";
                after = pa.text + "\n";
            }
        }
        const bool cutBefore = cutForDiff(before), cutAfter = cutForDiff(after);
        if (cutBefore || cutAfter)
            notes += tr("%1: long, the first %2 lines (at most %3 KiB) of each compared")
                         .arg(what)
                         .arg(kRulesBodyLines)
                         .arg(kRulesBodyBytes / 1024) +
                     '\n';
        const TextDiff d = unifiedDiff(before, after, tr("%1 before rules").arg(what).toStdString(),
                                       tr("%1 as sent").arg(what).toStdString());
        if (!d.ok) return notes + tr("%1: too many lines to compare").arg(what) + '\n';
        if (d.same) return notes + tr("%1: no differences").arg(what) + '\n';
        return notes + qs(d.text);
    };
    QStringList parts = {
        side(e.originalRequestFields, e.requestHeaders, tr("request headers")),
        bodySide(e.originalRequestBody, e.requestBody, e.requestBodySize, tr("request body")),
        side(e.originalResponseFields, e.responseHeaders, tr("response headers")),
        bodySide(e.originalResponseBody, e.responseBody, e.responseBodySize, tr("response body"))};
    parts.removeAll(QString());
    return parts.join('\n');
}

void InspectorWidget::fillPhases(const capture::Exchange& e) {
    const auto segments = TimelineWidget::segmentsOf(e);
    m_phases->setRowCount(int(segments.size()));
    const std::int64_t origin = segments.empty() ? 0 : segments.front().startNs;
    for (int i = 0; i < int(segments.size()); ++i) {
        const auto& s = segments[std::size_t(i)];
        const QString cells[] = {
            TimelineWidget::phaseLabel(s.phase),
            QStringLiteral("%1 ms").arg(double(s.endNs - origin) / 1e6, 0, 'f', 3),
            i ? QStringLiteral("+%1 ms").arg(double(s.endNs - s.startNs) / 1e6, 0, 'f', 3) : QString(),
            QString::number(s.endNs)};
        for (int c = 0; c < 4; ++c) {
            auto item = new QTableWidgetItem(cells[c]);
            if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_phases->setItem(i, c, item);
        }
    }
    const capture::HarTimings t = capture::harTimings(e);
    auto ms = [](double v) {
        return v < 0 ? QStringLiteral("n/a") : QStringLiteral("%1 ms").arg(v, 0, 'f', 3);
    };
    m_harTimings->setText(tr("HAR timings: connect %1 · send %2 · wait %3 · receive %4 · total %5")
                              .arg(ms(t.connect), ms(t.send), ms(t.wait), ms(t.receive),
                                   formatDuration(std::llround(t.total() * 1e6))));
}

void InspectorWidget::fillMessages(const capture::Exchange& e) {
    const bool grpc = e.protocol == capture::Protocol::Grpc;
    // A WebSocket session of a `ws: true` proxy route: its peer is the upstream, not Portico.
    const bool upstream = grpc || e.at(capture::Phase::UpstreamConnected) >= 0;
    m_messages->setHorizontalHeaderLabels({tr("Time"), tr("Direction"),
                                           grpc ? tr("Compressed") : tr("Opcode"), tr("Size"),
                                           grpc ? tr("Message") : tr("Data")});
    // gRPC messages are decoded here, when shown (never on the server's path): JSON with the
    // route's descriptor set, else raw protobuf fields.
    std::shared_ptr<const capture::GrpcSchema> schema;
    QString schemaError;
    if (grpc && m_server && m_server->config()) {
        std::string error;
        schema = m_grpcSchemas.forCall(*m_server->config(), e, &error);
        schemaError = qs(error);
    }
    m_messages->setRowCount(int(e.messages.size()));
    m_messageTexts.clear();
    const std::int64_t origin = e.at(capture::Phase::RequestHeaders);
    for (int i = 0; i < int(e.messages.size()); ++i) {
        const auto& m = e.messages[std::size_t(i)];
        const QString when = origin >= 0 ? formatDuration(m.timeNs - origin) : QString::number(m.timeNs);
        QString data, full, kind;
        if (grpc) {
            const capture::GrpcMessageText t = capture::describeGrpcMessage(e, m, schema.get());
            full = qs(t.text);
            if (t.kind == capture::GrpcMessageText::Kind::Json) {
                if (const JsonPretty p = prettyPrintJson(t.text); p.ok) full = qs(p.text);
                data = qs(t.text);
                full = qs(t.type) + "\n" + full;
            } else {
                data = QString(full).replace('\n', QStringLiteral(" · ")).trimmed();
                if (data.endsWith(QStringLiteral(" ·"))) data.chop(2);
            }
            const QString why = !t.note.empty()                       ? qs(t.note)
                                : (!schema && !schemaError.isEmpty()) ? schemaError
                                                                      : QString();
            switch (t.kind) {
            case capture::GrpcMessageText::Kind::Json:
                kind = tr("JSON");
                break;
            case capture::GrpcMessageText::Kind::Raw:
                kind = tr("raw protobuf");
                break;
            case capture::GrpcMessageText::Kind::Compressed:
                kind = tr("compressed");
                data = tr("(compressed, %1)").arg(why);
                full = BodyView::hexDump(m.data.substr(0, 1024));
                break;
            case capture::GrpcMessageText::Kind::Malformed:
                kind = tr("malformed");
                data = tr("(malformed: %1) %2").arg(why, data);
                break;
            }
            full = tr("%1 · %2 of %3 bytes kept").arg(kind).arg(m.data.size()).arg(m.size) +
                   (why.isEmpty() ? QString() : QStringLiteral(" · ") + why) + "\n\n" + full;
        } else {
            data = m.opcode == 2 ? BodyView::hexDump(m.data.substr(0, 64)).section('\n', 0, 3) : qs(m.data);
            full = m.opcode == 2 ? BodyView::hexDump(m.data) : qs(m.data);
        }
        if (m.size > m.data.size()) data += QStringLiteral(" …");
        m_messageTexts << full;
        const QString cells[] = {when,
                                 m.fromClient ? tr("→ sent by client")
                                 : upstream   ? tr("← sent by upstream")
                                              : tr("← sent by server"),
                                 grpc           ? (m.opcode == 0   ? tr("no")
                                                   : m.opcode == 1 ? tr("yes")
                                                                   : tr("flag %1").arg(m.opcode))
                                 : m.compressed ? tr("%1 (deflate)").arg(opcodeName(m.opcode))
                                                : opcodeName(m.opcode),
                                 formatBytes(m.size), data};
        for (int c = 0; c < 5; ++c) {
            auto item = new QTableWidgetItem(cells[c]);
            if (c == 4) item->setToolTip(full.left(4000));
            m_messages->setItem(i, c, item);
        }
    }
    m_messageDetail->clear();
    const int tab = m_tabs->indexOf(m_messagesPage);
    m_tabs->setTabVisible(tab, !e.messages.empty());
    QString title = tr("Messages (%1)").arg(e.messages.size());
    if (e.messageCount > e.messages.size())
        title = tr("Messages (%1 of %2)").arg(e.messages.size()).arg(e.messageCount);
    m_tabs->setTabText(tab, title);
    if (!e.messages.empty()) m_messages->selectRow(0);
}

void InspectorWidget::showMessageDetail() {
    const int row = m_messages->currentRow();
    m_messageDetail->setPlainText(row >= 0 && row < m_messageTexts.size() ? m_messageTexts[row] : QString());
}

void InspectorWidget::updateActions() {
    const bool have = m_exchange.has_value();
    m_curl->setEnabled(have);
    m_python->setEnabled(have);
    m_copyMore->setEnabled(have);
    // A refused exchange (no request line was read) has nothing to resend.
    const bool canResend = have && !m_exchange->method.empty() && !m_exchange->target.empty() && !m_thread &&
                           !resendTarget().isEmpty();
    m_resend->setText(m_thread ? tr("Cancel resend") : tr("Resend"));
    m_resend->setEnabled(canResend || (m_thread && !m_cancel->cancelled()));
    m_edit->setEnabled(canResend);
}

// The local CA's certificate for an https exchange while this server has `tls: auto` listeners:
// clients do not trust it until `portico cert install`, so copies name it (--cacert, cafile=).
std::string InspectorWidget::caFileFor(const capture::Exchange& e) const {
    if (e.scheme != "https" || !m_server) return {};
    const auto cfg = m_server->config();
    if (!cfg || std::none_of(cfg->listen.begin(), cfg->listen.end(),
                             [](const auto& l) { return l.tls && l.tls->autoCa; }))
        return {};
    const auto path = tls::defaultDataDir() / "ca" / "ca.crt";
    std::error_code ec;
    return std::filesystem::exists(path, ec) ? path.string() : std::string();
}

void InspectorWidget::copyAs(std::string (*make)(const capture::Exchange&, std::string_view,
                                                 std::string_view),
                             const QString& copied) {
    if (!m_exchange) return;
    QApplication::clipboard()->setText(QString::fromStdString(make(*m_exchange, {}, caFileFor(*m_exchange))));
    emit notice(copied.arg(m_exchange->id));
}

void InspectorWidget::copyAsCurl() { copyAs(&capture::toCurl, tr("Copied the curl command for #%1")); }
void InspectorWidget::copyAsPython() { copyAs(&capture::toPython, tr("Copied a Python script for #%1")); }
void InspectorWidget::copyAsFetch() { copyAs(&capture::toFetch, tr("Copied a fetch() call for #%1")); }
void InspectorWidget::copyAsHttpie() { copyAs(&capture::toHttpie, tr("Copied the HTTPie command for #%1")); }

bool InspectorWidget::resend() { return resendWith({}); }

bool InspectorWidget::resendWith(const capture::ReplayOptions& overrides) {
    if (!m_exchange || m_thread) return false;
    capture::ReplayOptions options = overrides;
    if (options.baseUrl.empty()) options.baseUrl = resendTarget().toStdString(); // the dialog may set it
    if (options.baseUrl.empty()) return false;
    m_resentTo = QString::fromStdString(options.baseUrl);
    options.timeout = std::chrono::milliseconds(10000);
    m_pending = std::make_shared<capture::ReplayResult>();
    m_cancel = std::make_shared<engine::Cancel>();
    auto result = m_pending;
    auto cancel = m_cancel;
    const capture::Exchange original = *m_exchange;
    // Network I/O never runs on the UI thread: resend blocks (bounded by its timeout).
    m_thread = QThread::create(
        [original, options, result, cancel] { *result = engine::resend(original, options, cancel.get()); });
    connect(m_thread, &QThread::finished, this, &InspectorWidget::onResendDone);
    m_compareSummary->setText(tr("Resending…"));
    updateActions();
    m_thread->start();
    return true;
}

void InspectorWidget::cancelResend() {
    if (!m_thread || m_cancel->cancelled()) return;
    m_cancel->cancel(); // the resend closes its socket and returns at once
    m_compareSummary->setText(tr("Cancelling…"));
    updateActions();
}

void InspectorWidget::onResendDone() {
    m_thread->deleteLater();
    m_thread = nullptr;
    m_resent = std::move(*m_pending);
    m_pending.reset();
    m_cancel.reset();
    showCompare();
    m_tabs->setCurrentWidget(m_comparePage);
    updateActions();
    emit resendFinished(m_resent->ok());
}

void InspectorWidget::showCompare() {
    m_tabs->setTabVisible(m_tabs->indexOf(m_comparePage), true);
    const auto& r = *m_resent;
    if (!r.ok()) {
        m_compareSummary->setText(r.error == "cancelled"
                                      ? tr("Resend to %1 cancelled.").arg(m_resentTo)
                                      : tr("Resend to %1 failed: %2").arg(m_resentTo, qs(r.error)));
        m_compare->setRowCount(0);
        m_compareDiff->clear();
        m_compareDiff->hide();
        return;
    }
    const auto& n = r.exchange;
    m_compareSummary->setText(
        tr("Resent to %1: %2 in %3 · %4")
            .arg(m_resentTo)
            .arg(n.status)
            .arg(formatDuration(n.durationNs()),
                 r.differences.empty()
                     ? tr("no differences (same status, headers and body)")
                     : (r.differences.size() == 1 ? tr("1 difference")
                                                  : tr("%1 differences").arg(r.differences.size()))));
    // A text body difference is shown as a unified diff below the table (its row then says so);
    // a binary one keeps the byte summary (sizes, the first differing byte).
    const bool bodyDiffers = std::any_of(r.differences.begin(), r.differences.end(),
                                         [](const auto& d) { return d.what == "body"; });
    const QString diff = bodyDiffers && m_exchange ? bodyDiff(*m_exchange, n) : QString();
    m_compareDiff->setPlainText(diff);
    m_compareDiff->setVisible(!diff.isEmpty());
    m_compare->setRowCount(int(r.differences.size()));
    for (int i = 0; i < int(r.differences.size()); ++i) {
        const auto& d = r.differences[std::size_t(i)];
        QString before = qs(d.before), after = qs(d.after);
        if (d.what == "body" && !diff.isEmpty()) {
            before = tr("%1 bytes · diff below").arg(m_exchange->responseBodySize);
            after = tr("%1 bytes · diff below").arg(n.responseBodySize);
        }
        m_compare->setItem(i, 0, new QTableWidgetItem(qs(d.what)));
        m_compare->setItem(i, 1, new QTableWidgetItem(before));
        m_compare->setItem(i, 2, new QTableWidgetItem(after));
    }
}

void InspectorWidget::editAndResend() {
    if (!m_exchange || m_thread) return;
    EditResendDialog dialog(*m_exchange, resendTarget(), this);
    if (dialog.exec() == QDialog::Accepted) resendWith(dialog.options());
}

} // namespace portico::ui
