// TimelineWidget: segments from the phases, painted as a waterfall with a ms scale.
#include "timelinewidget.h"

#include "traffic/trafficmodel.h"

#include <QPaintEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace portico::ui {

namespace {

constexpr int kRowHeight = 22;
constexpr int kTop = 24; // room for the scale labels
constexpr int kLabelWidth = 150;
constexpr int kValueWidth = 90;

QColor phaseColor(capture::Phase p) {
    switch (p) {
    case capture::Phase::Accepted:
    case capture::Phase::TlsDone:
        return QColor(230, 126, 34); // connection
    case capture::Phase::RequestHeaders:
    case capture::Phase::RequestBodyDone:
        return QColor(52, 152, 219); // request
    case capture::Phase::RouteMatched:
        return QColor(155, 89, 182); // routing
    case capture::Phase::UpstreamResolved:
    case capture::Phase::UpstreamTcpConnected:
    case capture::Phase::UpstreamConnected:
    case capture::Phase::UpstreamRequestSent:
    case capture::Phase::UpstreamFirstByte:
        return QColor(22, 160, 133); // upstream
    default:
        return QColor(39, 174, 96); // response
    }
}

QString msText(std::int64_t ns) { return formatDuration(ns); }

// A tick label with as many decimals as the step needs: "0 ms", "0.02 ms", "0.04 ms"; "1 ms".
QString tickText(std::int64_t ns, std::int64_t step) {
    const double ms = double(ns) / 1e6;
    int decimals = 0;
    for (std::int64_t unit = 1'000'000; unit > step && decimals < 6; unit /= 10)
        ++decimals;
    return QStringLiteral("%1 ms").arg(ms, 0, 'f', decimals);
}

// A round tick step (1, 2 or 5 × 10^k ns) giving at most `maxTicks` steps over `span`.
std::int64_t niceStep(double span, int maxTicks) {
    const double raw = std::max(span / maxTicks, 1.0);
    double pow10 = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * pow10 >= raw) return std::int64_t(m * pow10);
    return std::int64_t(10 * pow10);
}

} // namespace

QString TimelineWidget::phaseLabel(capture::Phase p) {
    switch (p) {
    case capture::Phase::Accepted:
        return tr("Connection accepted");
    case capture::Phase::TlsDone:
        return tr("TLS handshake done");
    case capture::Phase::RequestHeaders:
        return tr("Request headers read");
    case capture::Phase::RequestBodyDone:
        return tr("Request body read");
    case capture::Phase::RouteMatched:
        return tr("Route matched");
    case capture::Phase::UpstreamResolved:
        return tr("Upstream DNS");
    case capture::Phase::UpstreamTcpConnected:
        return tr("Upstream TCP connect");
    case capture::Phase::UpstreamConnected:
        return tr("Upstream ready (TLS done)");
    case capture::Phase::UpstreamRequestSent:
        return tr("Upstream request sent");
    case capture::Phase::UpstreamFirstByte:
        return tr("Upstream first byte");
    case capture::Phase::ResponseFirstByte:
        return tr("Response first byte");
    case capture::Phase::ResponseDone:
        return tr("Response done");
    }
    return QString::fromUtf8(capture::phaseName(p));
}

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
    setObjectName("timeline");
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

std::vector<TimelineSegment> TimelineWidget::segmentsOf(const capture::Exchange& e) {
    std::vector<TimelineSegment> out;
    const bool firstOnConnection = e.streamId <= 1;
    std::int64_t previous = -1;
    for (const capture::Phase phase : capture::kTimelineOrder) {
        if (!firstOnConnection && (phase == capture::Phase::Accepted || phase == capture::Phase::TlsDone))
            continue;
        const std::int64_t t = e.at(phase);
        if (t < 0) continue;
        out.push_back({phase, previous < 0 ? t : previous, t});
        previous = t;
    }
    return out;
}

void TimelineWidget::setExchange(const capture::Exchange& e) {
    m_segments = segmentsOf(e);
    m_totalNs = e.durationNs();
    m_note.clear();
    const std::int64_t accepted = e.at(capture::Phase::Accepted);
    const std::int64_t request = e.at(capture::Phase::RequestHeaders);
    if (e.streamId > 1 && accepted >= 0 && request >= accepted)
        m_note = tr("request %1 on its connection, accepted %2 before")
                     .arg(e.streamId)
                     .arg(msText(request - accepted));
    updateGeometry();
    update();
}

void TimelineWidget::clear() {
    m_segments.clear();
    m_note.clear();
    updateGeometry();
    update();
}

QSize TimelineWidget::sizeHint() const {
    return {600, kTop + kRowHeight * int(std::max<std::size_t>(m_segments.size(), 3) + 1) + 8};
}

QSize TimelineWidget::minimumSizeHint() const {
    return {kLabelWidth + kValueWidth + 100, kTop + kRowHeight * 2};
}

void TimelineWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.base());
    if (m_segments.empty()) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("No timeline"));
        return;
    }
    const std::int64_t origin = m_segments.front().startNs;
    std::int64_t end = origin;
    for (const auto& s : m_segments)
        end = std::max({end, s.startNs, s.endNs});
    const double span = double(std::max<std::int64_t>(end - origin, 1));
    const int barLeft = kLabelWidth;
    const int barWidth = std::max(40, width() - kLabelWidth - kValueWidth - 8);
    auto x = [&](std::int64_t ns) { return barLeft + double(ns - origin) / span * barWidth; };

    // Scale: round ticks (0, 20 µs, 40 µs, ...), at most five steps over the span.
    QColor grid = pal.color(QPalette::Mid);
    grid.setAlpha(90);
    const int bottom = kTop + kRowHeight * int(m_segments.size());
    const std::int64_t step = niceStep(span, 4);
    for (std::int64_t tick = 0; double(tick) <= span; tick += step) {
        const double fx = barLeft + barWidth * double(tick) / span;
        p.setPen(QPen(grid, 1, Qt::DashLine));
        p.drawLine(QPointF(fx, kTop - 4), QPointF(fx, bottom));
        p.setPen(pal.color(QPalette::Text));
        const QString label = tickText(tick, step);
        const int w = fontMetrics().horizontalAdvance(label);
        const double lx = std::clamp(fx - w / 2.0, double(barLeft), double(barLeft + barWidth - w));
        p.drawText(QPointF(lx, kTop - 8), label);
    }

    for (std::size_t i = 0; i < m_segments.size(); ++i) {
        const auto& s = m_segments[i];
        const int y = kTop + kRowHeight * int(i);
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRect(4, y, kLabelWidth - 8, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   phaseLabel(s.phase));
        const double x0 = x(std::min(s.startNs, s.endNs));
        const double x1 = x(std::max(s.startNs, s.endNs));
        const QRectF bar(x0, y + 5, std::max(2.0, x1 - x0), kRowHeight - 10);
        p.fillRect(bar, phaseColor(s.phase));
        p.drawText(QRect(barLeft + barWidth + 8, y, kValueWidth, kRowHeight),
                   Qt::AlignVCenter | Qt::AlignLeft,
                   i == 0 ? QStringLiteral("0") : QStringLiteral("+") + msText(s.endNs - s.startNs));
    }
    p.setPen(pal.color(QPalette::Text));
    QString footer = tr("total %1").arg(formatDuration(m_totalNs));
    if (!m_note.isEmpty()) footer += QStringLiteral(" · ") + m_note;
    p.drawText(QRect(4, bottom + 2, width() - 8, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft, footer);
}

} // namespace portico::ui
