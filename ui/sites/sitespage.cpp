// SitesPage: tree of vhosts/routes, forms with inline errors, validation by the core's loader.
#include "sitespage.h"

#include "servercontroller.h"

#include <portico/config/writer.h>
#include <portico/http/message.h>
#include <portico/validate/load.h>
#include <portico/validate/validate.h>

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QShortcut>
#include <QSplitter>
#include <QStackedWidget>
#include <QThreadPool>
#include <QTimer>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

namespace portico::ui {

namespace {

using config::MatchKind;

constexpr int kVhostRole = Qt::UserRole;
constexpr int kRouteRole = Qt::UserRole + 1;

// The order of the "Match" combo box.
const MatchKind kKinds[] = {MatchKind::Pattern,       MatchKind::Exact, MatchKind::Prefix,
                            MatchKind::PrefixNoRegex, MatchKind::Regex, MatchKind::RegexCaseless};

// Methods offered as check boxes (the config model knows these nine).
const http::Method kMethods[] = {http::Method::Get,     http::Method::Head,   http::Method::Post,
                                 http::Method::Put,     http::Method::Delete, http::Method::Patch,
                                 http::Method::Options, http::Method::Trace,  http::Method::Connect};

enum ActionIndex {
    RespondIndex,
    StaticIndex,
    RedirectIndex,
    ProxyIndex,
    GrpcIndex,
    WebSocketIndex,
    FastCgiIndex
};

// The combo index of a route's action (proxy, grpc and fastcgi share ProxyAction).
int actionIndex(const config::Action& a) {
    if (std::holds_alternative<config::StaticAction>(a)) return StaticIndex;
    if (std::holds_alternative<config::RedirectAction>(a)) return RedirectIndex;
    if (std::holds_alternative<config::WebSocketAction>(a)) return WebSocketIndex;
    if (const auto* px = std::get_if<config::ProxyAction>(&a))
        // FastCGI: an address, or (mid-edit, address cleared) no upstreams but a document root.
        return !px->fastcgi.address.empty() ||
                       (!px->grpc && px->upstreams.empty() && !px->fastcgi.root.empty())
                   ? FastCgiIndex
               : px->grpc ? GrpcIndex
                          : ProxyIndex;
    return RespondIndex;
}

const int kRedirectStatuses[] = {301, 302, 303, 307, 308};

QString q(const std::string& s) { return QString::fromStdString(s); }
std::string s(const QString& q) { return q.toStdString(); }

QString headersToText(const config::HeaderList& headers) {
    QStringList lines;
    for (const auto& [name, value] : headers)
        lines << q(name) + ": " + q(value);
    return lines.join('\n');
}

// "Name: value" per line; false with `error` naming the first bad line.
bool textToHeaders(const QString& text, config::HeaderList& out, QString& error) {
    out.clear();
    const QStringList lines = text.split('\n');
    for (int i = 0; i < lines.size(); ++i) {
        const QString line = lines[i].trimmed();
        if (line.isEmpty()) continue;
        const int colon = line.indexOf(':');
        if (colon <= 0) {
            error = QObject::tr("line %1: expected 'Name: value', got '%2'").arg(i + 1).arg(line);
            return false;
        }
        out.emplace_back(s(line.left(colon).trimmed()), s(line.mid(colon + 1).trimmed()));
    }
    return true;
}

QStringList splitList(const QString& text) {
    QStringList out;
    for (const QString& part : text.split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts))
        out << part;
    return out;
}

QString joinList(const std::vector<std::string>& items) {
    QStringList out;
    for (const auto& i : items)
        out << q(i);
    return out.join(", ");
}

QString upstreamUrl(const config::Upstream& u) {
    return (u.protocol == config::Upstream::Protocol::H2c  ? QString("h2c://")
            : u.protocol == config::Upstream::Protocol::H2 ? QString("https://")
                                                           : QString("http://")) +
           q(u.authority);
}

QString upstreamUrls(const config::ProxyAction& px, const QString& separator) {
    QStringList out;
    for (const auto& u : px.upstreams)
        out << upstreamUrl(u);
    return out.join(separator);
}

// "SCHEME://HOST[:PORT]" as the config loader reads it (http://, h2c://, https://; gRPC also takes a
// bare HOST:PORT as h2c). False with `error` on a bad URL; the loader checks the rest.
bool parseUpstream(const QString& url, bool grpc, config::Upstream& out, QString& error) {
    using P = config::Upstream::Protocol;
    QString rest;
    if (url.startsWith("http://")) {
        out.protocol = P::Http1;
        rest = url.mid(7);
    } else if (url.startsWith("h2c://")) {
        out.protocol = P::H2c;
        rest = url.mid(6);
    } else if (url.startsWith("https://")) {
        out.protocol = P::H2;
        rest = url.mid(8);
    } else if (grpc && !url.contains("://")) {
        out.protocol = P::H2c;
        rest = url;
    } else {
        error = QObject::tr("expected %1, got '%2'")
                    .arg(grpc ? QObject::tr("h2c://HOST:PORT or https://HOST:PORT")
                              : QObject::tr("http://HOST:PORT, h2c://HOST:PORT or https://HOST:PORT"),
                         url);
        return false;
    }
    if (grpc && out.protocol == P::Http1) {
        error = QObject::tr("gRPC needs HTTP/2: use h2c://HOST:PORT or https://HOST:PORT, got '%1'").arg(url);
        return false;
    }
    while (rest.endsWith('/'))
        rest.chop(1);
    if (rest.isEmpty() || rest.contains('/') || rest.contains('?')) {
        error = QObject::tr("an upstream is SCHEME://HOST[:PORT] without a path, got '%1'").arg(url);
        return false;
    }
    QString host = rest, port;
    if (rest.startsWith('[')) {
        const int close = rest.indexOf(']');
        if (close < 0 || (close + 1 < rest.size() && rest[close + 1] != ':')) {
            error = QObject::tr("bad IPv6 literal in '%1'").arg(url);
            return false;
        }
        host = rest.mid(1, close - 1);
        port = rest.mid(close + 2);
    } else if (const int colon = rest.lastIndexOf(':'); colon >= 0) {
        host = rest.left(colon);
        port = rest.mid(colon + 1);
        if (port.isEmpty()) port = "x";
    }
    out.port = out.protocol == P::H2 ? 443 : 80;
    if (!port.isEmpty()) {
        bool ok = false;
        const int n = port.toInt(&ok);
        if (!ok || n < 1 || n > 65535) {
            error = QObject::tr("upstream port must be 1..65535, got '%1'").arg(url);
            return false;
        }
        out.port = static_cast<std::uint16_t>(n);
    }
    if (host.isEmpty()) {
        error = QObject::tr("upstream needs a host, got '%1'").arg(url);
        return false;
    }
    out.host = s(host);
    out.authority = s(rest);
    return true;
}

QString durationText(config::Duration d) { return d.count() ? q(config::formatDuration(d)) : QString(); }

QString actionSummary(const config::Route& r, const QString& base) {
    auto rel = [&](const std::string& p) {
        QString path = q(p);
        return !base.isEmpty() && path.startsWith(base + '/') ? "./" + path.mid(base.size() + 1) : path;
    };
    if (const auto* rs = std::get_if<config::RespondAction>(&r.action))
        return QObject::tr("respond %1").arg(rs->status) +
               (rs->latency.count() ? QObject::tr(" after %1").arg(durationText(rs->latency)) : QString());
    if (const auto* st = std::get_if<config::StaticAction>(&r.action))
        return QObject::tr("static %1").arg(rel(st->root));
    if (const auto* rd = std::get_if<config::RedirectAction>(&r.action))
        return QObject::tr("redirect %1 → %2").arg(rd->status).arg(q(rd->to));
    if (const auto* ws = std::get_if<config::WebSocketAction>(&r.action))
        return ws->mode == config::WebSocketAction::Mode::Room ? QObject::tr("websocket room")
                                                               : QObject::tr("websocket echo");
    if (const auto* px = std::get_if<config::ProxyAction>(&r.action)) {
        if (!px->fastcgi.address.empty()) return QObject::tr("fastcgi %1").arg(q(px->fastcgi.address));
        return (px->grpc ? QObject::tr("grpc %1") : QObject::tr("proxy %1")).arg(upstreamUrls(*px, ", "));
    }
    return {};
}

} // namespace

SitesPage::SitesPage(ServerController* server, QWidget* parent) : QWidget(parent), m_server(server) {
    m_tree = new QTreeWidget;
    m_tree->setObjectName("sitesTree");
    m_tree->setHeaderLabels({tr("Site / route"), tr("Action"), tr("Methods")});
    m_tree->setUniformRowHeights(true);
    m_tree->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_tree->setMinimumWidth(300);

    auto addSite = new QPushButton(tr("Add site"));
    m_addRoute = new QPushButton(tr("Add route"));
    m_addRoute->setObjectName("addRoute");
    m_remove = new QPushButton(tr("Remove"));
    connect(addSite, &QPushButton::clicked, this, &SitesPage::addVhost);
    connect(m_addRoute, &QPushButton::clicked, this, &SitesPage::addRoute);
    connect(m_remove, &QPushButton::clicked, this, &SitesPage::removeSelected);
    auto treeButtons = new QHBoxLayout;
    treeButtons->addWidget(addSite);
    treeButtons->addWidget(m_addRoute);
    treeButtons->addWidget(m_remove);
    treeButtons->addStretch();
    auto left = new QWidget;
    auto leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(m_tree);
    leftLayout->addLayout(treeButtons);

    m_forms = new QStackedWidget;
    auto empty =
        new QLabel(tr("Select a site or a route to edit it.\nDrop a folder on the window to serve it."));
    empty->setAlignment(Qt::AlignCenter);
    m_forms->addWidget(empty);
    m_forms->addWidget(buildVhostForm());
    m_forms->addWidget(buildRouteForm());
    alignFormLabels(m_forms);
    auto scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setWidget(m_forms);
    scroll->setFrameShape(QFrame::NoFrame);

    auto splitter = new QSplitter;
    splitter->addWidget(left);
    splitter->addWidget(scroll);
    splitter->setStretchFactor(1, 1);

    m_notice = new QLabel;
    m_notice->setObjectName("sitesNotice");
    m_notice->setWordWrap(true);
    m_notice->setVisible(false);
    m_notice->setStyleSheet(
        "QLabel { background: palette(alternate-base); padding: 6px; border-radius: 3px; }");
    m_problems = new QLabel;
    m_problems->setObjectName("sitesProblems");
    m_problems->setWordWrap(true);
    m_problems->setStyleSheet("QLabel { color: #c0392b; }");
    m_apply = new QPushButton(tr("Apply"));
    m_apply->setObjectName("applyButton");
    m_apply->setToolTip(tr("Publish the edits to the running server and save the file (Ctrl+S)"));
    m_apply->setDefault(true);
    m_revert = new QPushButton(tr("Revert"));
    m_revert->setObjectName("revertButton");
    m_revert->setToolTip(tr("Throw the edits away and show what is being served"));
    connect(m_apply, &QPushButton::clicked, this, &SitesPage::apply);
    connect(m_revert, &QPushButton::clicked, this, &SitesPage::revert);
    auto bottom = new QHBoxLayout;
    bottom->addWidget(m_problems, 1);
    bottom->addWidget(m_revert);
    bottom->addWidget(m_apply);

    auto layout = new QVBoxLayout(this);
    layout->addWidget(m_notice);
    layout->addWidget(splitter, 1);
    layout->addLayout(bottom);

    connect(m_tree, &QTreeWidget::currentItemChanged, this, &SitesPage::onSelectionChanged);
    connect(m_server, &ServerController::configChanged, this, &SitesPage::onServerConfigChanged);
    // The banner: a reload says so and goes away after a few seconds; a refused edit stays until
    // dismissed (its errors are what the user has to fix). "Dismiss" closes either.
    m_noticeTimer = new QTimer(this);
    m_noticeTimer->setSingleShot(true);
    m_noticeTimer->setInterval(kNoticeMs);
    connect(m_noticeTimer, &QTimer::timeout, m_notice, &QWidget::hide);
    m_notice->setTextFormat(Qt::RichText);
    connect(m_notice, &QLabel::linkActivated, this, [this] {
        m_noticeTimer->stop();
        m_notice->hide();
    });
    connect(m_server, &ServerController::externalChange, this, [this](const QString& text, bool reloaded) {
        showNotice(text, !reloaded);
        emit notice(text);
    });
    onServerConfigChanged();
}

void SitesPage::alignFormLabels(QWidget* root) {
    // Every form of the page (the site's, the route's and each action's, nested in the route's)
    // gets one label width, so that all fields start at the same x.
    const QList<QFormLayout*> forms = root->findChildren<QFormLayout*>();
    int width = 0;
    QList<QWidget*> labels;
    for (QFormLayout* form : forms)
        for (int r = 0; r < form->rowCount(); ++r)
            if (QLayoutItem* item = form->itemAt(r, QFormLayout::LabelRole); item && item->widget()) {
                labels << item->widget();
                width = std::max(width, item->widget()->sizeHint().width());
            }
    for (QWidget* label : labels)
        label->setMinimumWidth(width);
}

QWidget* SitesPage::row(const QString& key, QWidget* editor, QHash<QString, Field>& fields) {
    auto box = new QWidget;
    auto v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    // Top-aligned: a row given more height than its editor's maximum (the text boxes) keeps the
    // editor next to its label instead of centring it below.
    v->addWidget(editor, 0, Qt::AlignTop);
    auto error = new QLabel;
    error->setObjectName("error:" + key);
    error->setWordWrap(true);
    error->setStyleSheet("QLabel { color: #c0392b; }");
    error->setVisible(false);
    v->addWidget(error);
    fields.insert(key, Field{editor, error});
    return box;
}

QString SitesPage::fieldName(const QString& path) const {
    static const QRegularExpression where(
        QStringLiteral("^vhosts\\[(\\d+)\\](?:\\.routes\\[(\\d+)\\])?\\.?(.*)$"));
    const auto m = where.match(path);
    const int vhost = m.hasMatch() ? m.captured(1).toInt() : -1;
    if (vhost < 0 || vhost >= int(m_draft.vhosts.size())) return path;
    const int route = m.captured(2).isEmpty() ? -1 : m.captured(2).toInt();
    if (route >= int(m_draft.vhosts[vhost].routes.size())) return path;
    QStringList parts{itemText(vhost, -1, nullptr)};
    if (route >= 0) parts << itemText(vhost, route, nullptr);
    const QString key = m.captured(3);
    if (!key.isEmpty()) {
        QString label = key;
        const Field field = (route >= 0 ? m_routeFields : m_vhostFields).value(key);
        if (field.error)
            for (const QFormLayout* form : findChildren<QFormLayout*>())
                if (auto* l = qobject_cast<QLabel*>(form->labelForField(field.error->parentWidget()));
                    l && !l->text().isEmpty()) {
                    label = l->text();
                    break;
                }
        parts << label;
    }
    return parts.join(QStringLiteral(" › "));
}

QLineEdit* SitesPage::lineEdit(const QString& key, QHash<QString, Field>& fields,
                               const QString& placeholder) {
    auto e = new QLineEdit;
    e->setObjectName(key);
    e->setPlaceholderText(placeholder);
    connect(e, &QLineEdit::textEdited, this, &SitesPage::commitForm);
    return e;
}

QPlainTextEdit* SitesPage::textEdit(const QString& key, QHash<QString, Field>& fields,
                                    const QString& placeholder) {
    auto e = new QPlainTextEdit;
    e->setObjectName(key);
    e->setPlaceholderText(placeholder);
    e->setTabChangesFocus(true);
    e->setMaximumHeight(90);
    connect(e, &QPlainTextEdit::textChanged, this, [this] {
        if (!m_loading) commitForm();
    });
    return e;
}

QCheckBox* SitesPage::checkBox(const QString& key, const QString& text, QHash<QString, Field>& fields) {
    auto c = new QCheckBox(text);
    c->setObjectName(key);
    connect(c, &QCheckBox::toggled, this, [this] {
        if (!m_loading) commitForm();
    });
    return c;
}

QWidget* SitesPage::buildVhostForm() {
    auto& f = m_vhostFields;
    auto w = new QWidget;
    auto form = new QFormLayout(w);
    auto title = new QLabel(tr("<b>Site</b> (virtual host)"));
    form->addRow(title);
    form->addRow(tr("Names"),
                 row("names", lineEdit("names", f, tr("localhost, *.localhost (empty: any host)")), f));
    form->addRow(tr("Port"), row("port", lineEdit("port", f, tr("any")), f));
    form->addRow(QString(),
                 row("default", checkBox("default", tr("Default site (when no name matches)"), f), f));
    auto root = lineEdit("root", f, tr("folder for paths no route takes (optional)"));
    auto browse = new QPushButton(tr("Browse…"));
    connect(browse, &QPushButton::clicked, this, [this, root] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder to serve"), root->text());
        if (dir.isEmpty()) return;
        root->setText(dir);
        commitForm();
    });
    auto rootBox = new QWidget;
    auto rootLayout = new QHBoxLayout(rootBox);
    rootLayout->setContentsMargins(0, 0, 0, 0);
    rootLayout->addWidget(root, 1);
    rootLayout->addWidget(browse);
    form->addRow(tr("Root"), row("root", rootBox, f));
    f["root"].editor = root;
    form->addRow(QString(), row("listing", checkBox("listing", tr("Directory listing"), f), f));
    form->addRow(tr("SPA fallback"), row("spa_fallback", lineEdit("spa_fallback", f, tr("/index.html")), f));
    form->addRow(tr("Headers"), row("headers", textEdit("headers", f, tr("Cache-Control: no-cache")), f));
    return w;
}

QWidget* SitesPage::buildRouteForm() {
    auto& f = m_routeFields;
    auto w = new QWidget;
    auto form = new QFormLayout(w);
    form->addRow(new QLabel(tr("<b>Route</b>")));

    m_kind = new QComboBox;
    m_kind->setObjectName("kind");
    m_kind->addItems({tr("Pattern  /users/:id, /assets/*"), tr("Exact  = /path"), tr("Prefix  /path/"),
                      tr("Prefix, no regex  ^~ /path/"), tr("Regex  ~"), tr("Regex, any case  ~*")});
    connect(m_kind, &QComboBox::activated, this, &SitesPage::commitForm);
    auto path = lineEdit("path", f, tr("/api/hello/:name"));
    auto matchBox = new QWidget;
    auto matchLayout = new QHBoxLayout(matchBox);
    matchLayout->setContentsMargins(0, 0, 0, 0);
    matchLayout->addWidget(m_kind);
    matchLayout->addWidget(path, 1);
    form->addRow(tr("Match"), row("path", matchBox, f));
    f["path"].editor = path;

    // Two rows of five: one row of nine was the form's widest line and pushed it behind a
    // horizontal scroll bar on a 1100 px window.
    auto methodsBox = new QWidget;
    auto methodsLayout = new QGridLayout(methodsBox);
    methodsLayout->setContentsMargins(0, 0, 0, 0);
    methodsLayout->setHorizontalSpacing(12);
    int methodIndex = 0;
    for (http::Method m : kMethods) {
        auto c = new QCheckBox(q(std::string(http::methodToken(m))));
        c->setObjectName("method:" + c->text());
        connect(c, &QCheckBox::toggled, this, [this] {
            if (!m_loading) commitForm();
        });
        methodsLayout->addWidget(c, methodIndex / 5, methodIndex % 5);
        ++methodIndex;
        m_methods << c;
    }
    methodsLayout->setColumnStretch(5, 1);
    methodsBox->setToolTip(tr("None checked: every method"));
    form->addRow(tr("Methods"), row("methods", methodsBox, f));
    form->addRow(tr("Name"), row("name", lineEdit("name", f, tr("label for logs and the GUI")), f));

    m_action = new QComboBox;
    m_action->setObjectName("action");
    m_action->addItems({tr("Respond (mock response)"), tr("Static files"), tr("Redirect"),
                        tr("Reverse proxy"), tr("gRPC"), tr("WebSocket"), tr("FastCGI")});
    connect(m_action, &QComboBox::activated, this, [this](int index) {
        m_actionForms->setCurrentIndex(index);
        commitForm();
    });
    form->addRow(tr("Action"), m_action);

    m_actionForms = new QStackedWidget;
    {
        auto page = new QWidget;
        auto pf = new QFormLayout(page);
        pf->setContentsMargins(0, 0, 0, 0);
        pf->addRow(tr("Status"), row("respond.status", lineEdit("respond.status", f, "200"), f));
        pf->addRow(
            tr("Headers"),
            row("respond.headers", textEdit("respond.headers", f, tr("Content-Type: application/json")), f));
        pf->addRow(tr("Body"),
                   row("respond.body", textEdit("respond.body", f, tr("{\"hello\":\"{{param.name}}\"}")), f));
        pf->addRow(tr("Body file"),
                   row("respond.file", lineEdit("respond.file", f, tr("instead of Body")), f));
        pf->addRow(tr("Latency"), row("respond.latency", lineEdit("respond.latency", f, tr("e.g. 20ms")), f));
        pf->addRow(tr("Latency max"),
                   row("respond.latency_max",
                       lineEdit("respond.latency_max", f, tr("random up to, e.g. 200ms")), f));
        pf->addRow(tr("Error rate"), row("respond.error_rate", lineEdit("respond.error_rate", f, "0..1"), f));
        pf->addRow(tr("Error status"),
                   row("respond.error_status", lineEdit("respond.error_status", f, "500"), f));
        pf->addRow(tr("Drop rate"), row("respond.drop_rate", lineEdit("respond.drop_rate", f, "0..1"), f));
        m_actionForms->addWidget(page);
    }
    {
        auto page = new QWidget;
        auto pf = new QFormLayout(page);
        pf->setContentsMargins(0, 0, 0, 0);
        pf->addRow(tr("Root"), row("static.root", lineEdit("static.root", f, tr("/path/to/folder")), f));
        pf->addRow(tr("Index"), row("static.index", lineEdit("static.index", f, "index.html"), f));
        pf->addRow(QString(),
                   row("static.listing", checkBox("static.listing", tr("Directory listing"), f), f));
        pf->addRow(tr("SPA fallback"),
                   row("static.spa_fallback", lineEdit("static.spa_fallback", f, "/index.html"), f));
        m_actionForms->addWidget(page);
    }
    {
        auto page = new QWidget;
        auto pf = new QFormLayout(page);
        pf->setContentsMargins(0, 0, 0, 0);
        pf->addRow(tr("To"), row("redirect.to", lineEdit("redirect.to", f, "/new/{{param.*}}"), f));
        m_redirectStatus = new QComboBox;
        m_redirectStatus->setObjectName("redirect.status");
        for (int st : kRedirectStatuses)
            m_redirectStatus->addItem(QString("%1 %2").arg(st).arg(q(std::string(http::reasonPhrase(st)))));
        connect(m_redirectStatus, &QComboBox::activated, this, &SitesPage::commitForm);
        pf->addRow(tr("Status"), row("redirect.status", m_redirectStatus, f));
        m_actionForms->addWidget(page);
    }
    {
        auto page = new QWidget;
        auto pf = new QFormLayout(page);
        pf->setContentsMargins(0, 0, 0, 0);
        pf->addRow(tr("Upstreams"),
                   row("proxy.upstream",
                       textEdit("proxy.upstream", f, tr("http://127.0.0.1:3000 (one per line, round-robin)")),
                       f));
        pf->addRow(tr("Strip prefix"),
                   row("proxy.strip_prefix", lineEdit("proxy.strip_prefix", f, "/api"), f));
        pf->addRow(QString(),
                   row("proxy.change_origin",
                       checkBox("proxy.change_origin", tr("Change origin (Host: the upstream's)"), f), f));
        pf->addRow(QString(),
                   row("proxy.ws", checkBox("proxy.ws", tr("Pass WebSocket upgrades through"), f), f));
        m_actionForms->addWidget(page);
    }
    {
        auto page = new QWidget;
        auto pf = new QFormLayout(page);
        pf->setContentsMargins(0, 0, 0, 0);
        pf->addRow(tr("Upstream"),
                   row("grpc.upstream", lineEdit("grpc.upstream", f, "h2c://127.0.0.1:50051"), f));
        m_actionForms->addWidget(page);
    }
    {
        auto page = new QWidget;
        auto pf = new QFormLayout(page);
        pf->setContentsMargins(0, 0, 0, 0);
        m_wsMode = new QComboBox;
        m_wsMode->setObjectName("websocket.mode");
        m_wsMode->addItems(
            {tr("Echo (messages go back to the sender)"), tr("Room (messages go to the other members)")});
        connect(m_wsMode, &QComboBox::activated, this, &SitesPage::commitForm);
        pf->addRow(tr("Mode"), row("websocket.mode", m_wsMode, f));
        pf->addRow(tr("Allowed origins"),
                   row("websocket.origins",
                       lineEdit("websocket.origins", f,
                                tr("http://localhost:5173, * (same site is always allowed)")),
                       f));
        pf->addRow(tr("Subprotocols"),
                   row("websocket.subprotocols", lineEdit("websocket.subprotocols", f, tr("chat, json")), f));
        m_actionForms->addWidget(page);
    }
    {
        auto page = new QWidget;
        auto pf = new QFormLayout(page);
        pf->setContentsMargins(0, 0, 0, 0);
        pf->addRow(tr("Address"),
                   row("fastcgi.address",
                       lineEdit("fastcgi.address", f, tr("127.0.0.1:9000 or unix:/run/php/php-fpm.sock")),
                       f));
        pf->addRow(tr("Root"), row("fastcgi.root", lineEdit("fastcgi.root", f, tr("/path/to/php/app")), f));
        pf->addRow(tr("Index"), row("fastcgi.index", lineEdit("fastcgi.index", f, "index.php"), f));
        m_actionForms->addWidget(page);
    }
    form->addRow(m_actionForms);
    form->addRow(tr("Route headers"),
                 row("headers", textEdit("headers", f, tr("added to every response of this route")), f));
    return w;
}

QString SitesPage::itemText(int vhost, int route, QString* action) const {
    const config::Vhost& vh = m_draft.vhosts[vhost];
    if (route < 0) {
        QString names = vh.names.empty() ? tr("(any host)") : joinList(vh.names);
        if (vh.port) names += QString(" :%1").arg(*vh.port);
        if (action) {
            *action = vh.root
                          ? tr("static %1").arg(QDir(m_server->baseDir()).relativeFilePath(q(vh.root->root)))
                          : QString();
            if (vh.isDefault) *action += tr(" (default)");
        }
        return names;
    }
    const config::Route& r = vh.routes[route];
    if (action) *action = actionSummary(r, m_server->baseDir());
    QString spec = q(r.path);
    switch (r.kind) {
    case MatchKind::Exact:
        spec = "= " + spec;
        break;
    case MatchKind::PrefixNoRegex:
        spec = "^~ " + spec;
        break;
    case MatchKind::Regex:
        spec = "~ " + spec;
        break;
    case MatchKind::RegexCaseless:
        spec = "~* " + spec;
        break;
    default:
        break;
    }
    return r.name.empty() ? spec : QString("%1  (%2)").arg(spec, q(r.name));
}

void SitesPage::rebuildTree() {
    const int vhost = m_vhost, route = m_route;
    m_loading = true;
    m_tree->clear();
    QTreeWidgetItem* current = nullptr;
    for (int i = 0; i < int(m_draft.vhosts.size()); ++i) {
        QString action;
        auto top = new QTreeWidgetItem(m_tree, {itemText(i, -1, &action), action});
        top->setData(0, kVhostRole, i);
        top->setData(0, kRouteRole, -1);
        QFont bold = top->font(0);
        bold.setBold(true);
        top->setFont(0, bold);
        if (i == vhost && route < 0) current = top;
        for (int j = 0; j < int(m_draft.vhosts[i].routes.size()); ++j) {
            const auto& r = m_draft.vhosts[i].routes[j];
            auto item =
                new QTreeWidgetItem(top, {itemText(i, j, &action), action,
                                          r.methods ? q(http::allowHeaderValue(r.methods)) : tr("any")});
            item->setData(0, kVhostRole, i);
            item->setData(0, kRouteRole, j);
            if (i == vhost && j == route) current = item;
        }
    }
    m_tree->expandAll();
    m_loading = false;
    if (current)
        m_tree->setCurrentItem(current);
    else
        onSelectionChanged();
    showErrors();
}

void SitesPage::select(int vhost, int route) {
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem* top = m_tree->topLevelItem(i);
        if (top->data(0, kVhostRole).toInt() != vhost) continue;
        m_tree->setCurrentItem(route < 0 ? top : top->child(route));
        return;
    }
}

void SitesPage::onSelectionChanged() {
    if (m_loading) return;
    QTreeWidgetItem* item = m_tree->currentItem();
    m_vhost = item ? item->data(0, kVhostRole).toInt() : -1;
    m_route = item ? item->data(0, kRouteRole).toInt() : -1;
    loadForm();
}

QString SitesPage::currentPrefix() const {
    if (m_vhost < 0) return {};
    QString p = QString("vhosts[%1]").arg(m_vhost);
    if (m_route >= 0) p += QString(".routes[%1]").arg(m_route);
    return p + '.';
}

void SitesPage::loadForm() {
    m_loading = true;
    m_addRoute->setEnabled(m_vhost >= 0);
    m_remove->setEnabled(m_vhost >= 0);
    auto setText = [](QHash<QString, Field>& f, const QString& key, const QString& text) {
        if (auto e = qobject_cast<QLineEdit*>(f[key].editor))
            e->setText(text);
        else if (auto t = qobject_cast<QPlainTextEdit*>(f[key].editor))
            t->setPlainText(text);
    };
    auto setCheck = [](QHash<QString, Field>& f, const QString& key, bool on) {
        qobject_cast<QCheckBox*>(f[key].editor)->setChecked(on);
    };
    if (m_vhost < 0 || m_vhost >= int(m_draft.vhosts.size())) {
        m_forms->setCurrentIndex(0);
    } else if (m_route < 0) {
        const config::Vhost& vh = m_draft.vhosts[m_vhost];
        auto& f = m_vhostFields;
        setText(f, "names", joinList(vh.names));
        setText(f, "port", vh.port ? QString::number(*vh.port) : QString());
        setCheck(f, "default", vh.isDefault);
        setText(f, "root", vh.root ? q(vh.root->root) : QString());
        setCheck(f, "listing", vh.root && vh.root->listing);
        setText(f, "spa_fallback", vh.root ? q(vh.root->spaFallback) : QString());
        setText(f, "headers", headersToText(vh.headers));
        m_forms->setCurrentIndex(1);
    } else {
        const config::Route& r = m_draft.vhosts[m_vhost].routes[m_route];
        auto& f = m_routeFields;
        m_kind->setCurrentIndex(
            int(std::find(std::begin(kKinds), std::end(kKinds), r.kind) - std::begin(kKinds)));
        setText(f, "path", q(r.path));
        setText(f, "name", q(r.name));
        for (int i = 0; i < m_methods.size(); ++i)
            m_methods[i]->setChecked(r.methods & http::methodBit(kMethods[i]));
        setText(f, "headers", headersToText(r.headers));
        const config::RespondAction rs = std::holds_alternative<config::RespondAction>(r.action)
                                             ? std::get<config::RespondAction>(r.action)
                                             : config::RespondAction{};
        setText(f, "respond.status", QString::number(rs.status));
        setText(f, "respond.headers", headersToText(rs.headers));
        setText(f, "respond.body", q(rs.body));
        setText(f, "respond.file", q(rs.bodyFile));
        setText(f, "respond.latency", durationText(rs.latency));
        setText(f, "respond.latency_max",
                rs.latencyMax > rs.latency ? durationText(rs.latencyMax) : QString());
        setText(f, "respond.error_rate", rs.errorRate > 0 ? QString::number(rs.errorRate) : QString());
        setText(f, "respond.error_status", QString::number(rs.errorStatus));
        setText(f, "respond.drop_rate", rs.dropRate > 0 ? QString::number(rs.dropRate) : QString());
        const config::StaticAction st = std::holds_alternative<config::StaticAction>(r.action)
                                            ? std::get<config::StaticAction>(r.action)
                                            : config::StaticAction{};
        setText(f, "static.root", q(st.root));
        setText(f, "static.index", joinList(st.index));
        setCheck(f, "static.listing", st.listing);
        setText(f, "static.spa_fallback", q(st.spaFallback));
        const config::RedirectAction rd = std::holds_alternative<config::RedirectAction>(r.action)
                                              ? std::get<config::RedirectAction>(r.action)
                                              : config::RedirectAction{};
        setText(f, "redirect.to", q(rd.to));
        m_redirectStatus->setCurrentIndex(
            int(std::find(std::begin(kRedirectStatuses), std::end(kRedirectStatuses), rd.status) -
                std::begin(kRedirectStatuses)));
        const int action = actionIndex(r.action);
        const config::ProxyAction px = std::holds_alternative<config::ProxyAction>(r.action)
                                           ? std::get<config::ProxyAction>(r.action)
                                           : config::ProxyAction{};
        setText(f, "proxy.upstream", action == ProxyIndex ? upstreamUrls(px, "\n") : QString());
        setText(f, "proxy.strip_prefix", action == ProxyIndex ? q(px.stripPrefix) : QString());
        setCheck(f, "proxy.change_origin", action == ProxyIndex && px.changeOrigin);
        setCheck(f, "proxy.ws", action == ProxyIndex && px.ws);
        setText(f, "grpc.upstream", action == GrpcIndex ? upstreamUrls(px, ", ") : QString());
        setText(f, "fastcgi.address", q(px.fastcgi.address));
        setText(f, "fastcgi.root", q(px.fastcgi.root));
        setText(f, "fastcgi.index", q(px.fastcgi.index));
        const config::WebSocketAction ws = std::holds_alternative<config::WebSocketAction>(r.action)
                                               ? std::get<config::WebSocketAction>(r.action)
                                               : config::WebSocketAction{};
        m_wsMode->setCurrentIndex(ws.mode == config::WebSocketAction::Mode::Room ? 1 : 0);
        setText(f, "websocket.origins", joinList(ws.origins));
        setText(f, "websocket.subprotocols", joinList(ws.subprotocols));
        m_action->setCurrentIndex(action);
        m_actionForms->setCurrentIndex(action);
        m_forms->setCurrentIndex(2);
    }
    m_loading = false;
    showErrors();
}

void SitesPage::commitForm() {
    if (m_loading || m_vhost < 0 || m_vhost >= int(m_draft.vhosts.size())) return;
    const QString prefix = currentPrefix();
    for (auto it = m_fieldErrors.begin(); it != m_fieldErrors.end();)
        it = it.key().startsWith(prefix) && !it.key().mid(prefix.size()).startsWith("routes[")
                 ? m_fieldErrors.erase(it)
                 : std::next(it);
    auto text = [](QHash<QString, Field>& f, const QString& key) {
        if (auto e = qobject_cast<QLineEdit*>(f[key].editor)) return e->text().trimmed();
        if (auto t = qobject_cast<QPlainTextEdit*>(f[key].editor)) return t->toPlainText();
        return QString();
    };
    auto checked = [](QHash<QString, Field>& f, const QString& key) {
        return qobject_cast<QCheckBox*>(f[key].editor)->isChecked();
    };
    auto fail = [&](const QString& key, const QString& message) { m_fieldErrors[prefix + key] = message; };
    auto integer = [&](QHash<QString, Field>& f, const QString& key, int& out) {
        bool ok = false;
        const int v = text(f, key).toInt(&ok);
        if (ok)
            out = v;
        else
            fail(key, tr("expected a number, got '%1'").arg(text(f, key)));
    };
    auto duration = [&](QHash<QString, Field>& f, const QString& key, config::Duration& out) {
        const QString t = text(f, key);
        if (t.isEmpty()) {
            out = config::Duration(0);
            return;
        }
        if (!config::parseDuration(s(t), out))
            fail(key, tr("invalid duration '%1' (write e.g. 500us, 250ms, 2s or 1m)").arg(t));
    };
    auto rate = [&](QHash<QString, Field>& f, const QString& key, double& out) {
        const QString t = text(f, key);
        bool ok = true;
        out = t.isEmpty() ? 0.0 : t.toDouble(&ok);
        if (!ok || out < 0 || out > 1) fail(key, tr("a probability from 0 to 1, got '%1'").arg(t));
    };
    auto headers = [&](QHash<QString, Field>& f, const QString& key, config::HeaderList& out) {
        QString error;
        if (!textToHeaders(text(f, key), out, error)) fail(key, error);
    };

    if (m_route < 0) {
        config::Vhost& vh = m_draft.vhosts[m_vhost];
        auto& f = m_vhostFields;
        vh.names.clear();
        for (const QString& n : splitList(text(f, "names")))
            vh.names.push_back(s(n));
        const QString port = text(f, "port");
        if (port.isEmpty()) {
            vh.port.reset();
        } else {
            bool ok = false;
            const int p = port.toInt(&ok);
            if (!ok || p < 1 || p > 65535)
                fail("port", tr("a port from 1 to 65535, or empty for any, got '%1'").arg(port));
            else
                vh.port = static_cast<std::uint16_t>(p);
        }
        vh.isDefault = checked(f, "default");
        const QString root = text(f, "root");
        if (root.isEmpty()) {
            vh.root.reset();
        } else {
            config::StaticAction st = vh.root.value_or(config::StaticAction{});
            st.root = s(QDir(m_server->baseDir()).absoluteFilePath(root));
            st.listing = checked(f, "listing");
            st.spaFallback = s(text(f, "spa_fallback"));
            vh.root = st;
        }
        headers(f, "headers", vh.headers);
    } else {
        config::Route& r = m_draft.vhosts[m_vhost].routes[m_route];
        auto& f = m_routeFields;
        r.kind = kKinds[qBound(0, m_kind->currentIndex(), 5)];
        r.path = s(text(f, "path"));
        r.spec = config::matchSpec(r.kind, r.path); // as the reader sets it (messages and labels quote it)
        r.name = s(text(f, "name"));
        r.methods = 0;
        for (int i = 0; i < m_methods.size(); ++i)
            if (m_methods[i]->isChecked()) r.methods |= http::methodBit(kMethods[i]);
        headers(f, "headers", r.headers);
        switch (m_action->currentIndex()) {
        case RespondIndex: {
            config::RespondAction rs = std::holds_alternative<config::RespondAction>(r.action)
                                           ? std::get<config::RespondAction>(r.action)
                                           : config::RespondAction{};
            integer(f, "respond.status", rs.status);
            headers(f, "respond.headers", rs.headers);
            rs.body = s(text(f, "respond.body"));
            const QString file = text(f, "respond.file");
            rs.bodyFile =
                file.isEmpty() ? std::string() : s(QDir(m_server->baseDir()).absoluteFilePath(file));
            duration(f, "respond.latency", rs.latency);
            duration(f, "respond.latency_max", rs.latencyMax);
            if (rs.latencyMax < rs.latency && text(f, "respond.latency_max").isEmpty())
                rs.latencyMax = rs.latency;
            rate(f, "respond.error_rate", rs.errorRate);
            rate(f, "respond.drop_rate", rs.dropRate);
            integer(f, "respond.error_status", rs.errorStatus);
            r.action = rs;
            break;
        }
        case StaticIndex: {
            config::StaticAction st;
            const QString root = text(f, "static.root");
            st.root = root.isEmpty() ? std::string() : s(QDir(m_server->baseDir()).absoluteFilePath(root));
            if (root.isEmpty()) fail("static.root", tr("a folder is required"));
            st.index.clear();
            for (const QString& i : splitList(text(f, "static.index")))
                st.index.push_back(s(i));
            st.listing = checked(f, "static.listing");
            st.spaFallback = s(text(f, "static.spa_fallback"));
            r.action = st;
            break;
        }
        case RedirectIndex: {
            config::RedirectAction rd;
            rd.to = s(text(f, "redirect.to"));
            rd.status = kRedirectStatuses[qBound(0, m_redirectStatus->currentIndex(), 4)];
            if (rd.to.empty()) fail("redirect.to", tr("where to redirect is required"));
            r.action = rd;
            break;
        }
        case ProxyIndex:
        case GrpcIndex: {
            // Keep what the form does not show (timeouts, forwarded, ...) when the kind is unchanged.
            const int index = m_action->currentIndex();
            const bool grpc = index == GrpcIndex;
            config::ProxyAction px = actionIndex(r.action) == index ? std::get<config::ProxyAction>(r.action)
                                                                    : config::ProxyAction{};
            px.grpc = grpc;
            px.fastcgi = {};
            const QString key = grpc ? "grpc.upstream" : "proxy.upstream";
            const QStringList urls =
                grpc ? splitList(text(f, key)) : text(f, key).split('\n', Qt::SkipEmptyParts);
            px.upstreams.clear();
            for (const QString& line : urls) {
                const QString url = line.trimmed();
                if (url.isEmpty()) continue;
                config::Upstream u;
                QString error;
                if (!parseUpstream(url, grpc, u, error)) {
                    fail(key, error);
                    break;
                }
                px.upstreams.push_back(u);
            }
            if (px.upstreams.empty() && !m_fieldErrors.contains(prefix + key))
                fail(key, tr("at least one upstream is required"));
            if (!grpc) {
                px.stripPrefix = s(text(f, "proxy.strip_prefix"));
                px.changeOrigin = checked(f, "proxy.change_origin");
                px.ws = checked(f, "proxy.ws");
            }
            r.action = px;
            break;
        }
        case WebSocketIndex: {
            config::WebSocketAction ws = std::holds_alternative<config::WebSocketAction>(r.action)
                                             ? std::get<config::WebSocketAction>(r.action)
                                             : config::WebSocketAction{};
            ws.mode = m_wsMode->currentIndex() == 1 ? config::WebSocketAction::Mode::Room
                                                    : config::WebSocketAction::Mode::Echo;
            ws.origins.clear();
            for (const QString& o : splitList(text(f, "websocket.origins"))) {
                if (o != "*" && !o.startsWith("http://") && !o.startsWith("https://"))
                    fail("websocket.origins",
                         tr("an origin is http://HOST[:PORT], https://HOST[:PORT] or *, got '%1'").arg(o));
                ws.origins.push_back(s(o));
            }
            ws.subprotocols.clear();
            for (const QString& p : splitList(text(f, "websocket.subprotocols")))
                ws.subprotocols.push_back(s(p));
            r.action = ws;
            break;
        }
        case FastCgiIndex: {
            // Keep what the form does not show (extension, timeouts), also while the address is
            // being retyped (empty for a moment).
            const auto* old = std::get_if<config::ProxyAction>(&r.action);
            config::ProxyAction px =
                old && !old->grpc && old->upstreams.empty() ? *old : config::ProxyAction{};
            px.grpc = false;
            px.upstreams.clear();
            config::FastCgi& fc = px.fastcgi;
            const QString address = text(f, "fastcgi.address");
            fc.address = s(address);
            fc.host.clear();
            fc.port = 0;
            fc.socketPath.clear();
            if (address.startsWith("unix:")) {
                if (address.size() == 5)
                    fail("fastcgi.address", tr("unix: needs a socket path"));
                else
                    fc.socketPath =
                        s(QDir::cleanPath(QDir(m_server->baseDir()).absoluteFilePath(address.mid(5))));
            } else {
                const int colon = address.lastIndexOf(':');
                QString host = colon > 0 ? address.left(colon) : QString();
                if (host.startsWith('[') && host.endsWith(']')) host = host.mid(1, host.size() - 2);
                bool ok = false;
                const int port = colon > 0 ? address.mid(colon + 1).toInt(&ok) : 0;
                if (host.isEmpty() || !ok || port < 1 || port > 65535) {
                    fail("fastcgi.address", tr("expected HOST:PORT or unix:PATH, got '%1'").arg(address));
                } else {
                    fc.host = s(host);
                    fc.port = static_cast<std::uint16_t>(port);
                }
            }
            const QString root = text(f, "fastcgi.root");
            fc.root = root.isEmpty() ? std::string() : s(QDir(m_server->baseDir()).absoluteFilePath(root));
            if (root.isEmpty()) fail("fastcgi.root", tr("the document root is required"));
            const QString index = text(f, "fastcgi.index");
            fc.index = index.isEmpty() ? config::FastCgi{}.index : s(index);
            r.action = px;
            break;
        }
        }
    }
    updateCurrentItemText();
    validate();
}

void SitesPage::validate() {
    m_loadErrors.clear();
    m_otherErrors.clear();
    m_validated.reset();
    const quint64 generation = ++m_checkGeneration;
    // On every edit, on this thread: patterns, regexes, duplicates, vhost cross-checks (no disk).
    addCoreErrors(validate::validate(m_draft, config::SourceMap{}, validate::Checks::NoFiles));
    m_checking = m_loadErrors.isEmpty() && m_otherErrors.isEmpty();
    if (m_checking) {
        // The draft as its file will read back, with every check: roots, files, cert/key pairs and
        // descriptor sets look at the disk, so off this thread. What reads back is what Apply
        // publishes and saves, so the file on disk always loads the same config again.
        QThreadPool::globalInstance()->start(
            [readBack = draftReadBack(), generation, page = QPointer<SitesPage>(this)] {
                auto result = readBack();
                QMetaObject::invokeMethod(
                    qApp,
                    [=] {
                        if (page) page->filesChecked(generation, result.config, result.errors);
                    },
                    Qt::QueuedConnection);
            });
    }
    showErrors();
}

std::function<config::LoadResult()> SitesPage::draftReadBack() const {
    return [text = config::configToYaml(m_draft, s(m_server->baseDir())),
            name = m_server->configPath().isEmpty() ? std::string("portico.yaml") : s(m_server->configPath()),
            baseDir = s(m_server->baseDir()), sourcePath = s(m_server->configPath())] {
        auto result = config::loadConfigText(text, name, baseDir);
        if (result.ok()) std::const_pointer_cast<config::Config>(result.config)->sourcePath = sourcePath;
        return result;
    };
}

void SitesPage::finishCheck() {
    if (!m_checking) return;
    const auto result = draftReadBack()();
    filesChecked(m_checkGeneration, result.config, result.errors);
}

void SitesPage::addCoreErrors(const std::vector<config::ConfigError>& errors) {
    for (const auto& e : errors) {
        const QString path = q(e.path);
        if (path.isEmpty())
            m_otherErrors << q(e.message);
        else if (!m_loadErrors.contains(path) && !m_fieldErrors.contains(path))
            m_loadErrors.insert(path, q(e.message));
    }
}

void SitesPage::filesChecked(quint64 generation, std::shared_ptr<const config::Config> config,
                             const std::vector<config::ConfigError>& errors) {
    // The draft changed since (a newer check runs), or finishCheck() took this one already.
    if (generation != m_checkGeneration || !m_checking) return;
    m_checking = false;
    m_validated = std::move(config);
    addCoreErrors(errors);
    showErrors();
}

void SitesPage::showErrors() {
    const QString prefix = currentPrefix();
    QHash<QString, Field>& fields = m_route >= 0 ? m_routeFields : m_vhostFields;
    QSet<QString> shown;
    for (auto it = fields.begin(); it != fields.end(); ++it) {
        QString message = m_fieldErrors.value(prefix + it.key());
        // The core's paths: "respond.status", "path" or "location" for the match, and deeper ones
        // such as "respond.headers.X-Foo" (the loader's, and a refused file's reading errors).
        for (const QMap<QString, QString>* errors : {&m_fieldErrors, &m_loadErrors}) {
            for (auto e = errors->begin(); message.isEmpty() && !prefix.isEmpty() && e != errors->end();
                 ++e) {
                if (!e.key().startsWith(prefix)) continue;
                QString rest = e.key().mid(prefix.size());
                if (rest == "location") rest = "path";
                if (rest == it.key() || rest.startsWith(it.key() + '.') || rest.startsWith(it.key() + '[')) {
                    message = e.value();
                    shown.insert(e.key());
                }
            }
        }
        it->error->setText(message);
        it->error->setVisible(!message.isEmpty());
    }
    // Mark tree items whose subtree has a problem.
    QStringList all;
    for (auto it = m_fieldErrors.begin(); it != m_fieldErrors.end(); ++it)
        all << it.key() + ": " + it.value();
    for (auto it = m_loadErrors.begin(); it != m_loadErrors.end(); ++it)
        all << it.key() + ": " + it.value();
    // "PATH: message" with the path named as the form names it (site › route › field label).
    auto named = [this](const QString& line) {
        const int colon = line.indexOf(": ");
        return colon > 0 && line.startsWith("vhosts[") ? fieldName(line.left(colon)) + line.mid(colon) : line;
    };
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem* top = m_tree->topLevelItem(i);
        for (int j = -1; j < top->childCount(); ++j) {
            QTreeWidgetItem* item = j < 0 ? top : top->child(j);
            const QString p =
                j < 0 ? QString("vhosts[%1].").arg(i) : QString("vhosts[%1].routes[%2].").arg(i).arg(j);
            QStringList mine;
            for (const QString& line : all)
                if (line.startsWith(p) && (j >= 0 || !line.mid(p.size()).startsWith("routes["))) mine << line;
            item->setForeground(0, mine.isEmpty() ? QBrush() : QBrush(QColor("#c0392b")));
            for (QString& line : mine)
                line = named(line);
            item->setToolTip(0, mine.join('\n'));
        }
    }
    all << m_otherErrors;
    if (all.isEmpty())
        m_problems->setText(hasChanges() ? tr("Unapplied changes.") : QString());
    else
        m_problems->setText((all.size() == 1 ? tr("1 problem: %1") : tr("%1 problems: %2").arg(all.size()))
                                .arg(named(all.first())));
    m_problems->setStyleSheet(all.isEmpty() ? QString() : QString("QLabel { color: #c0392b; }"));
    updateButtons();
}

void SitesPage::updateButtons() {
    m_apply->setEnabled(canApply());
    m_revert->setEnabled(hasChanges() || !m_fieldErrors.isEmpty());
    emit changesChanged(hasChanges());
}

void SitesPage::updateCurrentItemText() {
    QTreeWidgetItem* item = m_tree->currentItem();
    if (!item || m_vhost < 0) return;
    QString action;
    item->setText(0, itemText(m_vhost, m_route, &action));
    item->setText(1, action);
    if (m_route >= 0) {
        const auto& r = m_draft.vhosts[m_vhost].routes[m_route];
        item->setText(2, r.methods ? q(http::allowHeaderValue(r.methods)) : tr("any"));
    }
}

bool SitesPage::hasChanges() const {
    // Source positions are not compared (config::Location's operator==).
    return !m_published || m_draft != *m_published;
}

bool SitesPage::canApply() const {
    // While the file check runs, Apply stays enabled (no flicker on every keystroke) and, when
    // pressed, waits for the check's answer (finishCheck).
    return m_fieldErrors.isEmpty() && m_loadErrors.isEmpty() && m_otherErrors.isEmpty() &&
           (m_validated || m_checking) && hasChanges();
}

QStringList SitesPage::problems() const {
    QStringList all;
    for (auto it = m_fieldErrors.begin(); it != m_fieldErrors.end(); ++it)
        all << it.key() + ": " + it.value();
    for (auto it = m_loadErrors.begin(); it != m_loadErrors.end(); ++it)
        all << it.key() + ": " + it.value();
    return all + m_otherErrors;
}

void SitesPage::showNotice(const QString& text, bool sticky) {
    m_notice->setText(text.toHtmlEscaped().replace('\n', "<br>") +
                      QStringLiteral(" &nbsp;<a href=\"#dismiss\">") + tr("Dismiss") +
                      QStringLiteral("</a>"));
    m_notice->setVisible(true);
    if (sticky)
        m_noticeTimer->stop();
    else
        m_noticeTimer->start();
}

bool SitesPage::apply() {
    finishCheck();
    if (!canApply()) return false;
    QString error;
    // The draft becomes what its file reads back as (what is published), so that once applied it
    // equals the published config. The Rules tab publishes `rules` on its own: they are taken from
    // the config in force now, so that this Apply never undoes rules applied since the draft began.
    auto published = std::make_shared<config::Config>(*m_validated);
    if (const auto inForce = m_server->config()) published->rules = inForce->rules;
    m_validated = published;
    m_draft = *published;
    if (!m_server->apply(published, &error)) {
        showNotice(tr("Not applied: %1").arg(error), true);
        return false;
    }
    m_notice->setVisible(false);
    emit notice(
        m_server->configPath().isEmpty()
            ? tr("Applied (live).")
            : tr("Applied (live) and saved to %1.").arg(QFileInfo(m_server->configPath()).fileName()));
    return true;
}

void SitesPage::revert() {
    m_fieldErrors.clear();
    if (auto cfg = m_server->config()) m_draft = *cfg;
    m_vhost = qMin(m_vhost, int(m_draft.vhosts.size()) - 1);
    if (m_vhost >= 0) m_route = qMin(m_route, int(m_draft.vhosts[m_vhost].routes.size()) - 1);
    validate();
    rebuildTree();
}

void SitesPage::onServerConfigChanged() {
    auto cfg = m_server->config();
    if (!cfg) return;
    const bool pending = m_published && hasChanges();
    const bool sameAsDraft = *cfg == m_draft;
    m_published = cfg;
    if (pending && !sameAsDraft) {
        // Keep the user's unapplied edits; the notice says the file changed. The rules are the
        // Rules tab's: the draft follows the ones in force, so they are no change here.
        m_draft.rules = cfg->rules;
        showErrors();
        return;
    }
    m_draft = *cfg;
    m_fieldErrors.clear();
    if (m_vhost < 0 && !m_draft.vhosts.empty()) m_vhost = 0;
    validate();
    rebuildTree();
}

void SitesPage::addVhost() {
    config::Vhost vh;
    vh.names = {"new-site.localhost"};
    for (int n = 2; std::any_of(m_draft.vhosts.begin(), m_draft.vhosts.end(),
                                [&](const config::Vhost& v) { return v.names == vh.names; });
         ++n)
        vh.names = {"new-site-" + std::to_string(n) + ".localhost"};
    config::Route r;
    r.path = "/";
    config::RespondAction rs;
    rs.body = "Hello from " + vh.names.front() + "\n";
    r.action = rs;
    vh.routes.push_back(r);
    m_draft.vhosts.push_back(vh);
    m_vhost = int(m_draft.vhosts.size()) - 1;
    m_route = -1;
    validate();
    rebuildTree();
}

void SitesPage::addRoute() {
    if (m_vhost < 0) return;
    auto& routes = m_draft.vhosts[m_vhost].routes;
    config::Route r;
    r.path = "/new-route";
    for (int n = 2;
         std::any_of(routes.begin(), routes.end(), [&](const config::Route& o) { return o.path == r.path; });
         ++n)
        r.path = "/new-route-" + std::to_string(n);
    config::RespondAction rs;
    rs.body = "ok\n";
    r.action = rs;
    routes.push_back(r);
    m_route = int(routes.size()) - 1;
    validate();
    rebuildTree();
}

void SitesPage::removeSelected() {
    if (m_vhost < 0) return;
    if (m_route >= 0) {
        auto& routes = m_draft.vhosts[m_vhost].routes;
        routes.erase(routes.begin() + m_route);
        m_route = std::min(m_route, int(routes.size()) - 1);
    } else {
        m_draft.vhosts.erase(m_draft.vhosts.begin() + m_vhost);
        m_vhost = std::min(m_vhost, int(m_draft.vhosts.size()) - 1);
        m_route = -1;
    }
    m_fieldErrors.clear();
    validate();
    rebuildTree();
}

void SitesPage::openDraft(const config::Config& draft, const std::vector<config::ConfigError>& errors) {
    m_draft = draft;
    m_fieldErrors.clear();
    validate();
    // Reading errors (the value did not read and shows its default) stay until the user edits that
    // vhost or route; validation errors come back from validate() on every edit.
    for (const auto& e : errors)
        if (!m_loadErrors.contains(q(e.path)) && !m_fieldErrors.contains(q(e.path)))
            m_fieldErrors.insert(q(e.path), q(e.message));
    m_vhost = m_draft.vhosts.empty() ? -1 : 0;
    m_route = -1;
    if (!errors.empty()) {
        // Open where the first problem is.
        static const QRegularExpression where(
            QStringLiteral("^vhosts\\[(\\d+)\\](?:\\.routes\\[(\\d+)\\])?"));
        const auto m = where.match(q(errors.front().path));
        if (m.hasMatch()) {
            m_vhost = qMin(m.captured(1).toInt(), int(m_draft.vhosts.size()) - 1);
            m_route = m.captured(2).isEmpty() ? -1 : m.captured(2).toInt();
            if (m_vhost >= 0 && m_route >= int(m_draft.vhosts[m_vhost].routes.size())) m_route = -1;
        }
    }
    rebuildTree();
    select(m_vhost, m_route);
    const QString count = errors.size() == 1 ? tr("1 problem") : tr("%1 problems").arg(errors.size());
    showNotice(tr("%1 was not applied: %2, shown on the fields. Fix them and Apply; until then the server "
                  "keeps serving what it served.")
                   .arg(QFileInfo(m_server->configPath()).fileName(), count),
               true);
}

bool SitesPage::addFolder(const QString& dir) {
    QFileInfo info(dir);
    if (!info.isDir()) return false;
    QString label = info.fileName().toLower();
    label.replace(QRegularExpression("[^a-z0-9-]+"), "-");
    label = label.isEmpty() ? QString("folder") : label;
    config::Vhost vh;
    vh.names = {s(label + ".localhost")};
    config::StaticAction st;
    st.root = s(info.canonicalFilePath());
    st.listing = true;
    vh.root = st;
    // A name already in use gets the new folder instead (dropping the same folder twice is harmless).
    auto same = std::find_if(m_draft.vhosts.begin(), m_draft.vhosts.end(),
                             [&](const config::Vhost& v) { return v.names == vh.names; });
    if (same != m_draft.vhosts.end())
        *same = vh;
    else
        m_draft.vhosts.push_back(vh);
    m_vhost = int(std::find_if(m_draft.vhosts.begin(), m_draft.vhosts.end(),
                               [&](const config::Vhost& v) { return v.names == vh.names; }) -
                  m_draft.vhosts.begin());
    m_route = -1;
    validate();
    rebuildTree();
    if (!apply()) return false;
    QUrl served(m_server->firstHttpUrl());
    served.setHost(label + ".localhost");
    const QString url = served.toString();
    emit notice(tr("Serving %1 at %2").arg(info.canonicalFilePath(), url));
    return true;
}

} // namespace portico::ui
