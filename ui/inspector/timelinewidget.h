// TimelineWidget: the waterfall of one exchange's server-side phases (docs/capture.md "The timeline").
#pragma once

#include <portico/capture/exchange.h>

#include <QWidget>

#include <vector>

namespace portico::ui {

/// One bar: the time from the previous phase present to `phase`, in steady-clock ns.
struct TimelineSegment {
    capture::Phase phase;
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;
};

/// Paints one row per phase present: its name, a bar from the previous phase to it on a common
/// scale starting at the exchange's origin, and its length in ms. The origin is the request's first
/// byte; `accepted` and `tls_done` are drawn only for the first exchange of a connection (on a
/// keep-alive connection they happened long before and would flatten every other bar).
class TimelineWidget : public QWidget {
    Q_OBJECT

public:
    explicit TimelineWidget(QWidget* parent = nullptr);

    void setExchange(const capture::Exchange& e);
    void clear();
    const std::vector<TimelineSegment>& segments() const { return m_segments; }
    /// The segments drawn for `e` (what setExchange shows).
    static std::vector<TimelineSegment> segmentsOf(const capture::Exchange& e);
    /// A phase in words for people ("Request body read"); the data formats keep capture::phaseName.
    static QString phaseLabel(capture::Phase p);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    std::vector<TimelineSegment> m_segments;
    QString m_note;
    std::int64_t m_totalNs = -1; ///< Exchange::durationNs(): the one total shown everywhere
};

} // namespace portico::ui
