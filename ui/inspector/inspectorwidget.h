// InspectorWidget: one exchange in detail — headers, bodies, WebSocket and gRPC messages, the timeline
// waterfall — and the actions on it: copy as curl, Python, fetch or HTTPie, resend, edit and
// resend, compare.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/capture/grpc.h>
#include <portico/capture/replay_types.h>

#include <QWidget>

#include <memory>
#include <optional>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QToolButton;
class QTabWidget;
class QTableWidget;
class QThread;
class QTreeWidget;

namespace portico::engine {
class Cancel;
}

namespace portico::ui {

class BodyView;
class ServerController;
class TimelineWidget;

class InspectorWidget : public QWidget {
    Q_OBJECT

public:
    explicit InspectorWidget(ServerController* server, QWidget* parent = nullptr);
    ~InspectorWidget() override;

    void showExchange(const capture::Exchange& e);
    /// Nothing selected, or `message` (e.g. the record left the capture window).
    void clear(const QString& message = {});
    const std::optional<capture::Exchange>& exchange() const { return m_exchange; }
    /// The last resend's result (the new exchange and its differences from the shown one).
    const std::optional<capture::ReplayResult>& lastResend() const { return m_resent; }
    bool isResending() const { return m_thread != nullptr; }

    QTreeWidget* headersTree() const { return m_headers; }
    TimelineWidget* timeline() const { return m_timeline; }
    QWidget* timelinePage() const { return m_timelinePage; } ///< the waterfall and the phase table
    BodyView* responseBody() const { return m_responseBody; }
    QTabWidget* tabs() const { return m_tabs; }
    /// The Messages tab: one row per WebSocket or gRPC message, the selected one in full below.
    QTableWidget* messagesTable() const { return m_messages; }
    QPlainTextEdit* messageDetail() const { return m_messageDetail; }
    QWidget* messagesPage() const { return m_messagesPage; } ///< the tab holding both
    /// Where resends go: the server's first cleartext listener ("http://127.0.0.1:8080"), sent
    /// over HTTP/1.1 or HTTP/2 as capture::ReplayOptions::protocol says (engine::resend).
    QString resendTarget() const;
    /// The local CA certificate to name in a copy of `e` (https to this server's `tls: auto`
    /// listeners, once the CA exists); "" otherwise.
    std::string caFileFor(const capture::Exchange& e) const;
    /// One of capture's copy generators (toCurl, toPython, ...) to the clipboard; `copied` takes the id.
    void copyAs(std::string (*make)(const capture::Exchange&, std::string_view, std::string_view),
                const QString& copied);

    /// The request header fields as the Headers tab lists them: for HTTP/2 and gRPC as on the
    /// wire — names lower-case, the pseudo-header fields first (:method, :scheme, :authority,
    /// :path; built from the record's method, scheme, authority and target when the list lacks
    /// them, :authority left out when the client sent Host instead); HTTP/1.x as received.
    static std::vector<capture::Header> requestHeadersAsSent(const capture::Exchange& e);
    /// The response's: for HTTP/2 and gRPC lower-case with :status first (built from `status`
    /// when missing); HTTP/1.x as sent.
    static std::vector<capture::Header> responseHeadersAsSent(const capture::Exchange& e);
    /// The Compare tab's body section for two exchanges whose response bodies differ: a unified
    /// diff (textdiff.h) of the two bodies, JSON re-indented first (jsonpretty.h) so a one-line
    /// JSON body differs by line; "" when either body is binary (not printable UTF-8) or the
    /// bodies are too long to diff by line (the byte summary stays).
    static QString bodyDiff(const capture::Exchange& before, const capture::Exchange& after);
    QPlainTextEdit* compareDiff() const { return m_compareDiff; }
    /// The "Changed by rules" tab (shown when a rule changed the header fields or a body): a
    /// unified diff of the request's and the response's fields and bodies before the rules and as
    /// sent.
    QPlainTextEdit* rulesDiff() const { return m_rulesDiff; }
    /// That tab's text for `e`: per part the rules changed (request headers, request body, response
    /// headers, response body), a diff of it before them (Exchange::originalRequestFields, ...,
    /// originalRequestBody, ...) and as sent: fields "Name: value" a line, bodies by line (printable
    /// text only, the first 1000 lines or 64 KiB of each, with a note when cut); "" when nothing
    /// was changed.
    static QString rulesDiffText(const capture::Exchange& e);

public slots:
    void copyAsCurl();
    void copyAsPython();
    void copyAsFetch();
    void copyAsHttpie();
    /// Sends the request again (engine::resend) on a worker thread; resendFinished() when the answer
    /// is in.
    bool resend();
    bool resendWith(const capture::ReplayOptions& overrides);
    /// Ends a resend that still waits (connect, handshake, answer); the Compare tab then says it
    /// was cancelled. The Resend button does this while a resend runs ("Cancel resend").
    void cancelResend();
    void editAndResend();

signals:
    void resendFinished(bool ok);
    void notice(const QString& text);

private:
    void onResendDone();
    void fillHeaders(const capture::Exchange& e);
    void fillMessages(const capture::Exchange& e);
    void showMessageDetail();
    void fillPhases(const capture::Exchange& e);
    void showCompare();
    void updateActions();

    ServerController* m_server;
    std::optional<capture::Exchange> m_exchange;
    std::optional<capture::ReplayResult> m_resent;
    QLabel* m_summary = nullptr;
    QPushButton* m_curl = nullptr;
    QPushButton* m_resend = nullptr;
    QPushButton* m_edit = nullptr;
    QTabWidget* m_tabs = nullptr;
    QTreeWidget* m_headers = nullptr;
    BodyView* m_requestBody = nullptr;
    BodyView* m_responseBody = nullptr;
    TimelineWidget* m_timeline = nullptr;
    QWidget* m_timelinePage = nullptr;
    QTableWidget* m_phases = nullptr;
    QLabel* m_harTimings = nullptr;
    QTableWidget* m_messages = nullptr;
    QPlainTextEdit* m_messageDetail = nullptr;
    QWidget* m_messagesPage = nullptr;
    QStringList m_messageTexts; ///< the full text of each row (decoded gRPC, or the WebSocket data)
    capture::GrpcSchemaCache m_grpcSchemas; ///< descriptor sets of grpc: routes, loaded when first shown
    QWidget* m_comparePage = nullptr;
    QLabel* m_compareSummary = nullptr;
    QTableWidget* m_compare = nullptr;
    QPlainTextEdit* m_compareDiff = nullptr;
    QPlainTextEdit* m_rulesDiff = nullptr;
    QToolButton* m_copyMore = nullptr; ///< "Copy as…": fetch and HTTPie

    QThread* m_thread = nullptr;
    std::shared_ptr<capture::ReplayResult> m_pending;
    /// The resend's cancel (engine::Cancel, shared with its worker thread): the destructor cancels
    /// a resend still going, so closing the window does not wait for the resend's timeout.
    std::shared_ptr<engine::Cancel> m_cancel;
    QString m_resentTo; ///< the base URL of the last resend (the dialog may change it)
    QPushButton* m_python = nullptr;
};

} // namespace portico::ui
