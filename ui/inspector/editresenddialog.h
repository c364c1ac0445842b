// EditResendDialog: method, headers and body of a captured request, edited before it is sent again.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/capture/replay_types.h>

#include <QDialog>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace portico::ui {

class EditResendDialog : public QDialog {
    Q_OBJECT

public:
    /// `baseUrl`: where an unedited request goes ("http://127.0.0.1:8080", the running server).
    EditResendDialog(const capture::Exchange& original, const QString& baseUrl, QWidget* parent = nullptr);

    /// The edits as replay overrides: the URL (as baseUrl + target), the method, every header
    /// (those removed in the editor are sent as empty values, which the resend drops; Host,
    /// Content-Length and the other fields the sender owns are handled by the resend, see
    /// capture::ReplayOptions) and the body.
    capture::ReplayOptions options() const;

    /// "http://h:1/p?q" → base "http://h:1" and target "/p?q"; false with `error` when it is not an
    /// absolute http(s) URL with a host.
    static bool splitUrl(const QString& url, QString& base, QString& target, QString& error);

    /// "Name: value" lines → headers; false with `error` ("line 3: no ':'") on a bad line.
    static bool parseHeaders(const QString& text, std::vector<capture::Header>& out, QString& error);

private:
    void validate();

    capture::Exchange m_original;
    QLineEdit* m_url = nullptr;
    QComboBox* m_method = nullptr;
    QPlainTextEdit* m_headers = nullptr;
    QPlainTextEdit* m_body = nullptr;
    QLabel* m_error = nullptr;
    QPushButton* m_send = nullptr;
};

} // namespace portico::ui
