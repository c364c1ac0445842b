// EditResendDialog: the form and its conversion to capture::ReplayOptions.
#include "editresenddialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>

namespace portico::ui {

EditResendDialog::EditResendDialog(const capture::Exchange& original, const QString& baseUrl, QWidget* parent)
    : QDialog(parent), m_original(original) {
    setWindowTitle(tr("Edit and resend"));
    m_url = new QLineEdit;
    m_url->setObjectName("editUrl");
    QString target = QString::fromStdString(original.target);
    if (const int scheme = target.indexOf("://"); scheme >= 0) { // absolute-form, as a proxy sees it
        const int slash = target.indexOf('/', scheme + 3);
        target = slash < 0 ? QStringLiteral("/") : target.mid(slash);
    }
    if (!target.startsWith('/')) target.prepend('/');
    m_url->setText(baseUrl + target);
    m_method = new QComboBox;
    m_method->setObjectName("editMethod");
    m_method->setEditable(true);
    m_method->addItems({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"});
    m_method->setCurrentText(QString::fromStdString(original.method));
    m_headers = new QPlainTextEdit;
    m_headers->setObjectName("editHeaders");
    m_headers->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    QStringList lines;
    for (const auto& h : original.requestHeaders)
        lines << QString::fromStdString(h.name + ": " + h.value);
    m_headers->setPlainText(lines.join('\n'));
    m_body = new QPlainTextEdit;
    m_body->setObjectName("editBody");
    m_body->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_body->setPlainText(
        QString::fromUtf8(original.requestBody.data(), qsizetype(original.requestBody.size())));
    m_error = new QLabel;
    m_error->setObjectName("editError");
    m_error->setStyleSheet("color: #c0392b");
    m_error->setWordWrap(true);

    auto form = new QFormLayout;
    form->addRow(tr("URL"), m_url);
    form->addRow(tr("Method"), m_method);
    form->addRow(tr("Headers"), m_headers);
    form->addRow(tr("Body"), m_body);
    auto buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
    m_send = buttons->addButton(tr("Send"), QDialogButtonBox::AcceptRole);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_headers, &QPlainTextEdit::textChanged, this, &EditResendDialog::validate);
    connect(m_url, &QLineEdit::textChanged, this, &EditResendDialog::validate);
    auto layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_error);
    layout->addWidget(buttons);
    resize(640, 480);
    validate();
}

bool EditResendDialog::parseHeaders(const QString& text, std::vector<capture::Header>& out, QString& error) {
    out.clear();
    const QStringList lines = text.split('\n');
    for (int i = 0; i < lines.size(); ++i) {
        const QString line = lines[i].trimmed();
        if (line.isEmpty()) continue;
        const int colon = line.indexOf(':');
        if (colon <= 0) {
            error = tr("line %1: expected 'Name: value'").arg(i + 1);
            return false;
        }
        out.push_back(
            {line.left(colon).trimmed().toStdString(), line.mid(colon + 1).trimmed().toStdString()});
    }
    return true;
}

bool EditResendDialog::splitUrl(const QString& text, QString& base, QString& target, QString& error) {
    const QUrl url(text.trimmed(), QUrl::StrictMode);
    if (!url.isValid() || (url.scheme() != "http" && url.scheme() != "https") || url.host().isEmpty()) {
        error = tr("URL: write an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080/path");
        return false;
    }
    base = url.toString(QUrl::RemovePath | QUrl::RemoveQuery | QUrl::RemoveFragment | QUrl::RemoveUserInfo);
    while (base.endsWith('/'))
        base.chop(1);
    target = url.path(QUrl::FullyEncoded);
    if (target.isEmpty()) target = QStringLiteral("/");
    if (url.hasQuery()) target += '?' + url.query(QUrl::FullyEncoded);
    return true;
}

void EditResendDialog::validate() {
    std::vector<capture::Header> headers;
    QString error, base, target;
    const bool ok = splitUrl(m_url->text(), base, target, error) &&
                    parseHeaders(m_headers->toPlainText(), headers, error);
    m_error->setText(ok ? QString() : error);
    m_send->setEnabled(ok);
}

capture::ReplayOptions EditResendDialog::options() const {
    capture::ReplayOptions o;
    QString base, target, urlError;
    if (splitUrl(m_url->text(), base, target, urlError)) {
        o.baseUrl = base.toStdString();
        o.target = target.toStdString();
    }
    o.method = m_method->currentText().trimmed().toStdString();
    std::vector<capture::Header> edited;
    QString error;
    parseHeaders(m_headers->toPlainText(), edited, error);
    auto has = [&edited](const std::string& name) {
        for (const auto& h : edited)
            if (QString::fromStdString(h.name).compare(QString::fromStdString(name), Qt::CaseInsensitive) ==
                0)
                return true;
        return false;
    };
    for (const auto& h : m_original.requestHeaders)
        if (!has(h.name)) o.headers.push_back({h.name, ""});
    o.headers.insert(o.headers.end(), edited.begin(), edited.end());
    o.body = m_body->toPlainText().toStdString();
    return o;
}

} // namespace portico::ui
