// EditResendDialog: method, headers and body of a captured request, edited before it is sent again.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/capture/replay.h>

#include <QDialog>

class QComboBox;
class QLabel;
class QPlainTextEdit;

namespace portico::ui {

class EditResendDialog : public QDialog {
    Q_OBJECT

public:
    explicit EditResendDialog(const capture::Exchange& original, QWidget* parent = nullptr);

    /// The edits as replay overrides: the method, every header (those removed in the editor are
    /// sent as empty values, which replay() drops) and the body.
    capture::ReplayOptions options() const;

    /// "Name: value" lines → headers; false with `error` ("line 3: no ':'") on a bad line.
    static bool parseHeaders(const QString& text, std::vector<capture::Header>& out, QString& error);

private:
    void validate();

    capture::Exchange m_original;
    QComboBox* m_method = nullptr;
    QPlainTextEdit* m_headers = nullptr;
    QPlainTextEdit* m_body = nullptr;
    QLabel* m_error = nullptr;
    QPushButton* m_send = nullptr;
};

} // namespace portico::ui
