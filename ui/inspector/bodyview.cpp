// BodyView: mode selection and the four renderings.
#include "bodyview.h"
#include "jsonpretty.h"

#include <portico/capture/har.h>

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace portico::ui {

namespace {

bool printable(const std::string& bytes) {
    if (!capture::isUtf8(bytes)) return false;
    for (unsigned char c : bytes)
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
    return true;
}

} // namespace

BodyView::BodyView(QWidget* parent) : QWidget(parent) {
    m_mode = new QComboBox;
    m_mode->setObjectName("bodyMode");
    m_mode->addItems({tr("Auto"), tr("Text"), tr("JSON"), tr("Hex"), tr("Image")});
    m_info = new QLabel;
    m_info->setObjectName("bodyInfo");
    auto bar = new QHBoxLayout;
    bar->setContentsMargins(0, 0, 0, 0);
    bar->addWidget(new QLabel(tr("View as")));
    bar->addWidget(m_mode);
    bar->addWidget(m_info, 1);

    m_text = new QPlainTextEdit;
    m_text->setObjectName("bodyText");
    m_text->setReadOnly(true);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_image = new QLabel;
    m_image->setObjectName("bodyImage");
    m_image->setAlignment(Qt::AlignCenter);
    m_imageArea = new QScrollArea;
    m_imageArea->setWidget(m_image);
    m_imageArea->setWidgetResizable(true);
    m_stack = new QStackedWidget;
    m_stack->addWidget(m_text);
    m_stack->addWidget(m_imageArea);

    auto layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(m_stack, 1);
    connect(m_mode, &QComboBox::currentIndexChanged, this, &BodyView::render);
}

BodyView::Mode BodyView::autoMode(const std::string& bytes, const QString& contentType) {
    const QString type = contentType.section(';', 0, 0).trimmed().toLower();
    if (type.startsWith("image/") && type != "image/svg+xml") return Image;
    if (type.contains("json") && isJson(bytes)) return Json;
    if (type.startsWith("text/") || type.contains("json") || type.contains("xml") ||
        type.contains("javascript") || type.contains("x-www-form-urlencoded"))
        return printable(bytes) ? Text : Hex;
    if (!bytes.empty() && (bytes.front() == '{' || bytes.front() == '[') && isJson(bytes)) return Json;
    return printable(bytes) ? Text : Hex;
}

QString BodyView::hexDump(const std::string& bytes) {
    QString out;
    out.reserve(int(bytes.size() / 16 + 1) * 78);
    for (std::size_t line = 0; line < bytes.size(); line += 16) {
        out += QStringLiteral("%1  ").arg(qulonglong(line), 8, 16, QLatin1Char('0'));
        QString ascii;
        for (std::size_t i = line; i < line + 16; ++i) {
            if (i < bytes.size()) {
                const unsigned char c = static_cast<unsigned char>(bytes[i]);
                out += QStringLiteral("%1 ").arg(c, 2, 16, QLatin1Char('0'));
                ascii += c >= 0x20 && c < 0x7f ? QChar(c) : QChar('.');
            } else {
                out += QStringLiteral("   ");
            }
            if (i == line + 7) out += ' ';
        }
        out += QStringLiteral(" |") + ascii + QStringLiteral("|\n");
    }
    return out;
}

QString BodyView::prettyJson(const std::string& bytes) {
    const JsonPretty pretty = prettyPrintJson(bytes);
    return pretty.ok ? QString::fromStdString(pretty.text) : QString();
}

void BodyView::setBody(const std::string& bytes, std::uint64_t fullSize, const QString& contentType) {
    m_bytes = bytes;
    m_fullSize = fullSize;
    m_contentType = contentType;
    render();
}

void BodyView::clear() { setBody({}, 0, {}); }

void BodyView::setMode(Mode mode) { m_mode->setCurrentIndex(mode); }

QString BodyView::shownText() const { return m_text->toPlainText(); }

void BodyView::render() {
    const Mode asked = static_cast<Mode>(std::max(0, m_mode->currentIndex()));
    m_effective = asked == Auto ? autoMode(m_bytes, m_contentType) : asked;
    QString info = m_fullSize == m_bytes.size()
                       ? (m_fullSize == 1 ? tr("1 byte") : tr("%1 bytes").arg(qulonglong(m_fullSize)))
                       : tr("first %1 of %2 bytes").arg(m_bytes.size()).arg(qulonglong(m_fullSize));
    if (!m_contentType.isEmpty()) info += QStringLiteral(" · ") + m_contentType;
    if (m_bytes.empty()) info = m_fullSize ? tr("%1 bytes, none captured").arg(m_fullSize) : tr("no body");
    switch (m_effective) {
    case Image: {
        QImage image;
        if (image.loadFromData(QByteArray::fromStdString(m_bytes))) {
            m_image->setPixmap(QPixmap::fromImage(image));
            info += tr(" · %1×%2").arg(image.width()).arg(image.height());
        } else {
            m_image->setPixmap({});
            m_image->setText(m_fullSize > m_bytes.size() ? tr("Only a prefix of the image was captured")
                                                         : tr("Not an image Qt can read"));
        }
        m_stack->setCurrentWidget(m_imageArea);
        break;
    }
    case Json: {
        // The text as sent, re-indented; when it is not JSON, the text unchanged and why.
        const JsonPretty pretty = prettyPrintJson(m_bytes);
        m_text->setPlainText(pretty.ok ? QString::fromStdString(pretty.text)
                                       : QString::fromUtf8(m_bytes.data(), qsizetype(m_bytes.size())));
        if (!pretty.ok && !m_bytes.empty()) {
            if (pretty.tooLarge)
                info += tr(" · shown as text: too large to indent");
            else if (pretty.truncated && m_fullSize > m_bytes.size())
                info += tr(" · shown as text: not complete JSON (only a prefix was captured)");
            else if (pretty.truncated)
                info +=
                    tr(" · shown as text: not complete JSON (%1)").arg(QString::fromStdString(pretty.error));
            else
                info += tr(" · shown as text: not valid JSON at byte %1 (%2)")
                            .arg(qulonglong(pretty.offset))
                            .arg(QString::fromStdString(pretty.error));
        }
        m_stack->setCurrentWidget(m_text);
        break;
    }
    case Hex:
        m_text->setPlainText(hexDump(m_bytes));
        m_stack->setCurrentWidget(m_text);
        break;
    default:
        m_text->setPlainText(QString::fromUtf8(m_bytes.data(), qsizetype(m_bytes.size())));
        m_stack->setCurrentWidget(m_text);
        break;
    }
    m_info->setText(info);
}

} // namespace portico::ui
