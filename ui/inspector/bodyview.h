// BodyView: a body prefix as text, re-indented JSON, hex or image, chosen from the content type.
#pragma once

#include <QWidget>

#include <string>

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QScrollArea;
class QStackedWidget;

namespace portico::ui {

class BodyView : public QWidget {
    Q_OBJECT

public:
    enum Mode { Auto = 0, Text, Json, Hex, Image };

    explicit BodyView(QWidget* parent = nullptr);

    /// `bytes` is the captured prefix of a body of `fullSize` bytes.
    void setBody(const std::string& bytes, std::uint64_t fullSize, const QString& contentType);
    void clear();
    void setMode(Mode mode);
    /// The mode in effect (Auto resolved to what the content type and bytes suggest).
    Mode effectiveMode() const { return m_effective; }
    QString shownText() const;

    /// What Auto picks for these bytes and content type.
    static Mode autoMode(const std::string& bytes, const QString& contentType);
    static QString hexDump(const std::string& bytes);
    /// `bytes` re-indented as sent (key order, duplicates, number literals kept; see jsonpretty.h),
    /// or "" when `bytes` is not one complete JSON value.
    static QString prettyJson(const std::string& bytes);

private:
    void render();

    std::string m_bytes;
    std::uint64_t m_fullSize = 0;
    QString m_contentType;
    Mode m_effective = Text;
    QComboBox* m_mode = nullptr;
    QLabel* m_info = nullptr;
    QStackedWidget* m_stack = nullptr;
    QPlainTextEdit* m_text = nullptr;
    QScrollArea* m_imageArea = nullptr;
    QLabel* m_image = nullptr;
};

} // namespace portico::ui
