// RulesPage: the rules table, the rule and action forms, validation by the core's loader, Apply
// (the config in force with only `rules` replaced) and the Matched column from the engine.
#include "rulespage.h"

#include "servercontroller.h"

#include <portico/config/reader.h>
#include <portico/config/writer.h>
#include <portico/validate/validate.h>

#include <yaml-cpp/yaml.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <string_view>

namespace portico::ui {

namespace {

using config::Duration;
using config::Rule;
using config::RuleAction;

QString q(const std::string& s) { return QString::fromStdString(s); }
std::string s(const QString& t) { return t.toStdString(); }

const char* const kErrorColor = "#c0392b";

/// The value the YAML writer writes for a map_local or map_remote action (the path relative to
/// `baseDir` when under it, the URL): the writer's own output, read back as text.
std::string writtenValue(const RuleAction& a, const QString& baseDir) {
    if (a.kind == RuleAction::Kind::MapRemote && a.mapRemote.upstreams.size() != 1) return {};
    config::Config c;
    Rule r;
    r.actions = {a};
    c.rules = {r};
    try {
        const YAML::Node action = YAML::Load(config::configToYaml(c, s(baseDir)))["rules"][0]["actions"][0];
        const char* key = a.kind == RuleAction::Kind::MapLocal ? "map_local" : "map_remote";
        if (action[key] && action[key].IsScalar()) return action[key].Scalar();
    } catch (const YAML::Exception&) {
    }
    return {};
}

/// `key: value` read as an action by the loader's reader, relative paths against `baseDir`; nullopt
/// when the reader refuses it.
std::optional<RuleAction> readAction(const char* key, const YAML::Node& value, const QString& baseDir) {
    YAML::Node action;
    action[key] = value;
    YAML::Node rule;
    rule["actions"].push_back(action);
    YAML::Node root;
    root["rules"].push_back(rule);
    YAML::Emitter out;
    out << root;
    const config::ReadResult read = config::readConfigText(out.c_str(), "portico.yaml", s(baseDir), "");
    for (const config::ConfigError& e : read.errors)
        if (e.path.starts_with("rules[")) return std::nullopt;
    if (read.config->rules.size() != 1 || read.config->rules[0].actions.size() != 1) return std::nullopt;
    return read.config->rules[0].actions[0];
}

/// `key: text` (map_local, map_remote, a throttle preset) read as readAction above reads it.
std::optional<RuleAction> readAction(const char* key, const QString& text, const QString& baseDir) {
    return readAction(key, YAML::Node(s(text)), baseDir);
}

/// The value of `breakpoint:` for the timeout field's text: `{timeout: TEXT}`, or `{}` (the default
/// timeout) when it is empty.
YAML::Node breakpointValue(const QString& timeout) {
    YAML::Node value(YAML::NodeType::Map);
    if (const QString t = timeout.trimmed(); !t.isEmpty()) value["timeout"] = s(t);
    return value;
}

/// What a map_remote that has no URL the reader took yet holds, so that the writer can write it (the
/// URL as typed replaces it in what is read back).
config::ProxyAction placeholderRemote() {
    static const config::ProxyAction px = [] {
        auto a = readAction("map_remote", "http://127.0.0.1:3000", QString());
        return a ? a->mapRemote : config::ProxyAction{};
    }();
    return px;
}

/// Chrome DevTools' network throttling presets, as `throttle:` takes them (the reader has their values).
const char* const kThrottlePresets[] = {"Slow 3G", "Fast 3G", "Slow 4G", "Fast 4G"};

/// `v` with at most three decimals and no trailing zeros, no group separators ("562.5", "400").
QString plain(double v) {
    QString t = QString::number(v, 'f', 3);
    if (t.contains('.')) {
        while (t.endsWith('0'))
            t.chop(1);
        if (t.endsWith('.')) t.chop(1);
    }
    return t;
}

QString ms(Duration d) { return plain(double(d.count()) / 1e6); }
QString kbit(std::uint64_t bytesPerSecond) { return plain(double(bytesPerSecond) * 8 / 1000); }

/// A number field's text (C locale, as its validator takes it); empty or unreadable: 0.
double fieldNumber(const QLineEdit* edit) {
    bool ok = false;
    const double v = edit->text().trimmed().toDouble(&ok);
    return ok && v > 0 ? v : 0;
}

QString actionSummary(const RuleAction& a, const QString& baseDir) {
    switch (a.kind) {
    case RuleAction::Kind::SetHeader: {
        QStringList fields;
        for (const auto& [name, value] : a.set)
            fields << q(name) + ": " + q(value);
        return QObject::tr("set %1").arg(fields.join(", "));
    }
    case RuleAction::Kind::RemoveHeader: {
        QStringList names;
        for (const std::string& name : a.remove)
            names << q(name);
        return QObject::tr("remove %1").arg(names.join(", "));
    }
    case RuleAction::Kind::Fail: {
        QString with;
        switch (a.failure) {
        case RuleAction::Failure::Reset:
            with = QObject::tr("reset");
            break;
        case RuleAction::Failure::Close:
            with = QObject::tr("close");
            break;
        case RuleAction::Failure::Timeout:
            with = QObject::tr("timeout");
            break;
        case RuleAction::Failure::Status:
            with = QString::number(a.failStatus);
            break;
        }
        return a.rate < 1 ? QObject::tr("fail %1 % → %2").arg(a.rate * 100, 0, 'g', 3).arg(with)
                          : QObject::tr("fail → %1").arg(with);
    }
    case RuleAction::Kind::MapLocal:
        return QObject::tr("map_local %1").arg(q(writtenValue(a, baseDir)));
    case RuleAction::Kind::MapRemote:
        return QObject::tr("map_remote %1").arg(q(writtenValue(a, baseDir)));
    case RuleAction::Kind::Throttle: {
        if (!a.throttlePreset.empty()) return QObject::tr("throttle %1").arg(q(a.throttlePreset));
        QStringList rates;
        if (a.throttleDown > 0) rates << QObject::tr("↓%1 kbit/s").arg(kbit(a.throttleDown));
        if (a.throttleUp > 0) rates << QObject::tr("↑%1 kbit/s").arg(kbit(a.throttleUp));
        QStringList parts;
        if (a.throttleLatency.count() > 0) parts << QObject::tr("%1 ms").arg(ms(a.throttleLatency));
        if (!rates.isEmpty()) parts << rates.join(' ');
        return parts.isEmpty() ? QObject::tr("throttle (no limit)")
                               : QObject::tr("throttle %1").arg(parts.join(", "));
    }
    case RuleAction::Kind::ReplaceBody:
        return QObject::tr("replace_body /%1/ → %2")
            .arg(q(a.regex), a.replaceWith.empty() ? QStringLiteral("\"\"") : q(a.replaceWith));
    case RuleAction::Kind::Breakpoint:
        return QObject::tr("breakpoint (timeout %1)").arg(q(config::formatDuration(a.breakpointTimeout)));
    }
    return {};
}

/// The config as its file reads back (the reader alone: no validation), for the reader's checks of
/// the actions. A map_remote URL or a breakpoint timeout in `typed` ([rule][action]) replaces the one
/// the writer wrote.
config::ReadResult readBack(const config::Config& cfg, const QString& baseDir,
                            const std::vector<std::vector<std::optional<std::string>>>& typed) {
    std::string text = config::configToYaml(cfg, s(baseDir));
    const bool anyTyped = std::any_of(typed.begin(), typed.end(), [](const auto& actions) {
        return std::any_of(actions.begin(), actions.end(), [](const auto& t) { return t.has_value(); });
    });
    if (anyTyped) {
        try {
            YAML::Node root = YAML::Load(text);
            for (std::size_t i = 0; i < typed.size() && i < cfg.rules.size(); ++i)
                for (std::size_t j = 0; j < typed[i].size() && j < cfg.rules[i].actions.size(); ++j)
                    if (!typed[i][j]) {
                        continue;
                    } else if (cfg.rules[i].actions[j].kind == RuleAction::Kind::MapRemote) {
                        root["rules"][i]["actions"][j]["map_remote"] = *typed[i][j];
                    } else if (cfg.rules[i].actions[j].kind == RuleAction::Kind::Breakpoint) {
                        root["rules"][i]["actions"][j]["breakpoint"] = breakpointValue(q(*typed[i][j]));
                    }
            YAML::Emitter out;
            out << root;
            text = out.c_str();
        } catch (const YAML::Exception&) {
        }
    }
    return config::readConfigText(text, "portico.yaml", s(baseDir), cfg.sourcePath);
}

/// "rules[2].actions[1].set_header.X-A" → {2, 1}; action -1 when the path is not an action's.
std::pair<int, int> rulePathIndex(const QString& path) {
    static const QRegularExpression re(QStringLiteral("^rules\\[(\\d+)\\](?:\\.actions\\[(\\d+)\\])?"));
    const auto m = re.match(path);
    if (!m.hasMatch()) return {-1, -1};
    return {m.captured(1).toInt(), m.captured(2).isEmpty() ? -1 : m.captured(2).toInt()};
}

/// A combo box whose long item texts do not set the form's minimum width (the page fits 800
/// logical pixels; the texts are elided when narrower).
void narrow(QComboBox* combo) {
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(16);
}

} // namespace

RulesPage::RulesPage(ServerController* server, QWidget* parent) : QWidget(parent), m_server(server) {
    m_table = new QTableWidget(0, ColumnCount);
    m_table->setObjectName("rulesTable");
    m_table->setHorizontalHeaderLabels(
        {tr("On"), tr("Name"), tr("Stage"), tr("Match"), tr("Actions"), tr("Matched")});
    m_table->horizontalHeaderItem(On)->setToolTip(tr("Whether the rule applies (`enabled:`)"));
    m_table->horizontalHeaderItem(Matched)->setToolTip(
        tr("Exchanges the rule in force matched (kept across reloads for a rule of the same name)"));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    m_table->setWordWrap(false);
    QHeaderView* header = m_table->horizontalHeader();
    header->setSectionResizeMode(On, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(Stage, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(Match, QHeaderView::Stretch);
    header->setSectionResizeMode(Matched, QHeaderView::ResizeToContents);
    header->resizeSection(Name, 170);
    header->resizeSection(Actions, 280);
    header->setHighlightSections(false);

    m_add = new QPushButton(tr("Add"));
    m_add->setObjectName("addRule");
    m_add->setToolTip(tr("A new rule at the end of the list (not applied until Apply)"));
    m_remove = new QPushButton(tr("Remove"));
    m_remove->setObjectName("removeRule");
    m_up = new QPushButton(tr("Move up"));
    m_up->setObjectName("moveRuleUp");
    m_up->setToolTip(tr("Rules run in list order"));
    m_down = new QPushButton(tr("Move down"));
    m_down->setObjectName("moveRuleDown");
    m_down->setToolTip(m_up->toolTip());
    connect(m_add, &QPushButton::clicked, this, &RulesPage::addRule);
    connect(m_remove, &QPushButton::clicked, this, &RulesPage::removeSelected);
    connect(m_up, &QPushButton::clicked, this, &RulesPage::moveUp);
    connect(m_down, &QPushButton::clicked, this, &RulesPage::moveDown);
    auto tableButtons = new QHBoxLayout;
    tableButtons->addWidget(m_add);
    tableButtons->addWidget(m_remove);
    tableButtons->addWidget(m_up);
    tableButtons->addWidget(m_down);
    tableButtons->addStretch();
    auto top = new QWidget;
    auto topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addWidget(m_table);
    topLayout->addLayout(tableButtons);

    m_editor = new QStackedWidget;
    auto empty = new QLabel(tr("Select a rule to edit it, or Add one.\nIn the Traffic tab, right-click an "
                               "exchange: Create rule from this exchange."));
    empty->setAlignment(Qt::AlignCenter);
    empty->setEnabled(false);
    m_editor->addWidget(empty);
    auto form = new QWidget;
    auto formLayout = new QHBoxLayout(form);
    formLayout->setContentsMargins(0, 0, 0, 0);
    formLayout->addWidget(buildRuleForm(), 1);
    formLayout->addWidget(buildActionForms(), 1);
    m_editor->addWidget(form);

    // The form scrolls on a small screen (800×500 logical pixels at 2×) instead of making the
    // window's minimum size exceed it.
    auto scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(m_editor);
    auto splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(top);
    splitter->addWidget(scroll);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({260, 440}); // the form gets the larger share: rule lists are short
    splitter->setChildrenCollapsible(false);

    m_notice = new QLabel;
    m_notice->setObjectName("rulesNotice");
    m_notice->setWordWrap(true);
    m_notice->setVisible(false);
    m_notice->setStyleSheet(
        "QLabel { background: palette(alternate-base); padding: 6px; border-radius: 3px; }");
    m_problems = new QLabel;
    m_problems->setObjectName("rulesProblems");
    m_problems->setWordWrap(true);
    m_apply = new QPushButton(tr("Apply"));
    m_apply->setObjectName("applyRules");
    m_apply->setToolTip(tr("Publish the rules to the running server (live) and save the file"));
    m_apply->setDefault(true);
    m_revert = new QPushButton(tr("Revert"));
    m_revert->setObjectName("revertRules");
    m_revert->setToolTip(tr("Throw the edits away and show the rules in force"));
    connect(m_apply, &QPushButton::clicked, this, &RulesPage::apply);
    connect(m_revert, &QPushButton::clicked, this, &RulesPage::revert);
    auto bottom = new QHBoxLayout;
    bottom->addWidget(m_problems, 1);
    bottom->addWidget(m_revert);
    bottom->addWidget(m_apply);

    auto layout = new QVBoxLayout(this);
    layout->addWidget(m_notice);
    layout->addWidget(splitter, 1);
    layout->addLayout(bottom);

    connect(m_table, &QTableWidget::currentCellChanged, this, &RulesPage::onTableSelection);
    connect(m_table, &QTableWidget::cellChanged, this, &RulesPage::onTableItemChanged);
    connect(m_server, &ServerController::configChanged, this, &RulesPage::onServerConfigChanged);
    m_matchesTimer = new QTimer(this);
    m_matchesTimer->setInterval(kMatchesMs);
    connect(m_matchesTimer, &QTimer::timeout, this, &RulesPage::refreshMatches);
    onServerConfigChanged();
}

QLabel* RulesPage::errorLabel(const QString& key) {
    auto label = new QLabel;
    label->setObjectName("error:" + key);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setStyleSheet(QString("QLabel { color: %1; }").arg(kErrorColor));
    label->setVisible(false);
    m_errorLabels.insert(key, label);
    return label;
}

QWidget* RulesPage::buildRuleForm() {
    auto box = new QGroupBox(tr("Rule"));
    auto form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    auto field = [this](QWidget* editor, const QString& key) {
        auto w = new QWidget;
        auto v = new QVBoxLayout(w);
        v->setContentsMargins(0, 0, 0, 0);
        v->setSpacing(2);
        v->addWidget(editor);
        v->addWidget(errorLabel(key));
        return w;
    };
    m_name = new QLineEdit;
    m_name->setObjectName("ruleName");
    m_name->setPlaceholderText(tr("a label (shown on the exchanges it changes)"));
    m_enabled = new QCheckBox(tr("Enabled"));
    m_enabled->setObjectName("ruleEnabled");
    m_stage = new QComboBox;
    m_stage->setObjectName("ruleStage");
    m_stage->addItem(tr("request — before the route's action or upstream"), int(Rule::Stage::Request));
    m_stage->addItem(tr("response — before the response is sent"), int(Rule::Stage::Response));
    narrow(m_stage);
    m_match = new QLineEdit;
    m_match->setObjectName("ruleMatch");
    m_match->setPlaceholderText(tr("every exchange"));
    m_match->setToolTip(tr("The Traffic filter language: method:POST path:/api host:example.test "
                           "header:NAME=VALUE client:127.0.0.1 protocol:h2, bare words, -negated"));
    auto hint = new QLabel(tr("e.g. <code>path:/api method:POST,PUT -header:Authorization</code>"));
    hint->setEnabled(false);
    auto match = field(m_match, "match");
    static_cast<QVBoxLayout*>(match->layout())->insertWidget(1, hint);
    form->addRow(tr("Name"), field(m_name, "name"));
    form->addRow(QString(), m_enabled);
    form->addRow(tr("Stage"), field(m_stage, "stage"));
    form->addRow(tr("Match"), match);
    form->addRow(QString(), errorLabel("rule"));

    connect(m_name, &QLineEdit::textChanged, this, &RulesPage::commitRule);
    connect(m_enabled, &QCheckBox::toggled, this, &RulesPage::commitRule);
    connect(m_stage, &QComboBox::currentIndexChanged, this, &RulesPage::commitRule);
    connect(m_match, &QLineEdit::textChanged, this, &RulesPage::commitRule);
    return box;
}

QWidget* RulesPage::buildActionForms() {
    auto box = new QGroupBox(tr("Actions (in order)"));
    auto v = new QVBoxLayout(box);

    m_actions = new QListWidget;
    m_actions->setObjectName("ruleActions");
    m_actions->setMaximumHeight(90);
    m_addAction = new QPushButton(tr("Add"));
    m_addAction->setObjectName("addAction");
    m_removeAction = new QPushButton(tr("Remove"));
    m_removeAction->setObjectName("removeAction");
    m_actionUp = new QPushButton(tr("Up"));
    m_actionUp->setObjectName("actionUp");
    m_actionDown = new QPushButton(tr("Down"));
    m_actionDown->setObjectName("actionDown");
    connect(m_addAction, &QPushButton::clicked, this, &RulesPage::addAction);
    connect(m_removeAction, &QPushButton::clicked, this, &RulesPage::removeAction);
    connect(m_actionUp, &QPushButton::clicked, this, [this] { moveAction(-1); });
    connect(m_actionDown, &QPushButton::clicked, this, [this] { moveAction(1); });
    auto listButtons = new QVBoxLayout;
    for (QPushButton* b : {m_addAction, m_removeAction, m_actionUp, m_actionDown})
        listButtons->addWidget(b);
    listButtons->addStretch();
    auto list = new QHBoxLayout;
    list->addWidget(m_actions, 1);
    list->addLayout(listButtons);
    v->addLayout(list);
    v->addWidget(errorLabel("actions"));

    auto kindForm = new QFormLayout;
    m_kind = new QComboBox;
    m_kind->setObjectName("actionKind");
    m_kind->addItem(tr("set_header — replace or add fields"), int(RuleAction::Kind::SetHeader));
    m_kind->addItem(tr("remove_header — remove fields"), int(RuleAction::Kind::RemoveHeader));
    m_kind->addItem(tr("fail — a status, reset, close or timeout"), int(RuleAction::Kind::Fail));
    m_kind->addItem(tr("map_local — answer from a file or folder"), int(RuleAction::Kind::MapLocal));
    m_kind->addItem(tr("map_remote — send to another origin"), int(RuleAction::Kind::MapRemote));
    m_kind->addItem(tr("throttle — slow the exchange down"), int(RuleAction::Kind::Throttle));
    m_kind->addItem(tr("replace_body — rewrite the body (regex)"), int(RuleAction::Kind::ReplaceBody));
    m_kind->addItem(tr("breakpoint — pause it until you decide"), int(RuleAction::Kind::Breakpoint));
    narrow(m_kind);
    kindForm->addRow(tr("Action"), m_kind);
    v->addLayout(kindForm);

    m_actionForms = new QStackedWidget;
    // set_header: a name/value table.
    auto setPage = new QWidget;
    auto setLayout = new QHBoxLayout(setPage);
    setLayout->setContentsMargins(0, 0, 0, 0);
    m_setHeaders = new QTableWidget(0, 2);
    m_setHeaders->setObjectName("setHeaders");
    m_setHeaders->setHorizontalHeaderLabels({tr("Header"), tr("Value")});
    m_setHeaders->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_setHeaders->verticalHeader()->setVisible(false);
    auto addHeader = new QPushButton(tr("Add header"));
    addHeader->setObjectName("addSetHeader");
    auto removeHeader = new QPushButton(tr("Remove header"));
    removeHeader->setObjectName("removeSetHeader");
    auto setButtons = new QVBoxLayout;
    setButtons->addWidget(addHeader);
    setButtons->addWidget(removeHeader);
    setButtons->addStretch();
    setLayout->addWidget(m_setHeaders, 1);
    setLayout->addLayout(setButtons);
    connect(addHeader, &QPushButton::clicked, this, [this] {
        const int row = m_setHeaders->rowCount();
        m_loading = true;
        m_setHeaders->insertRow(row);
        m_setHeaders->setItem(row, 0, new QTableWidgetItem("X-Header"));
        m_setHeaders->setItem(row, 1, new QTableWidgetItem("1"));
        m_loading = false;
        commitAction();
        m_setHeaders->setCurrentCell(row, 0);
        m_setHeaders->editItem(m_setHeaders->item(row, 0));
    });
    connect(removeHeader, &QPushButton::clicked, this, [this] {
        if (m_setHeaders->currentRow() < 0) return;
        m_setHeaders->removeRow(m_setHeaders->currentRow());
        commitAction();
    });
    connect(m_setHeaders, &QTableWidget::cellChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(setPage);

    // remove_header: a list of names.
    auto removePage = new QWidget;
    auto removeLayout = new QHBoxLayout(removePage);
    removeLayout->setContentsMargins(0, 0, 0, 0);
    m_removeHeaders = new QListWidget;
    m_removeHeaders->setObjectName("removeHeaders");
    m_removeHeaders->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                                     QAbstractItemView::SelectedClicked);
    auto addName = new QPushButton(tr("Add name"));
    addName->setObjectName("addRemoveHeader");
    auto removeName = new QPushButton(tr("Remove name"));
    removeName->setObjectName("removeRemoveHeader");
    auto removeButtons = new QVBoxLayout;
    removeButtons->addWidget(addName);
    removeButtons->addWidget(removeName);
    removeButtons->addStretch();
    removeLayout->addWidget(m_removeHeaders, 1);
    removeLayout->addLayout(removeButtons);
    connect(addName, &QPushButton::clicked, this, [this] {
        m_loading = true;
        auto item = new QListWidgetItem("X-Header");
        item->setFlags(item->flags() | Qt::ItemIsEditable);
        m_removeHeaders->addItem(item);
        m_loading = false;
        commitAction();
        m_removeHeaders->setCurrentItem(item);
        m_removeHeaders->editItem(item);
    });
    connect(removeName, &QPushButton::clicked, this, [this] {
        delete m_removeHeaders->currentItem();
        commitAction();
    });
    connect(m_removeHeaders, &QListWidget::itemChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(removePage);

    // fail: rate, and reset or a status.
    auto failPage = new QWidget;
    auto failForm = new QFormLayout(failPage);
    failForm->setContentsMargins(0, 0, 0, 0);
    m_failRate = new QDoubleSpinBox;
    m_failRate->setObjectName("failRate");
    // 0 < rate <= 1: the smallest step the box shows stands for "greater than 0".
    m_failRate->setRange(0.001, 1.0);
    m_failRate->setDecimals(3);
    m_failRate->setSingleStep(0.05);
    m_failRate->setToolTip(tr("The share of matching exchanges that fail (1 = every one)"));
    m_failWith = new QComboBox;
    m_failWith->setObjectName("failWith");
    m_failWith->addItem(tr("a status (Portico answers it itself)"), int(RuleAction::Failure::Status));
    m_failWith->addItem(tr("reset (nothing is sent; the connection or stream is reset)"),
                        int(RuleAction::Failure::Reset));
    m_failWith->addItem(tr("close (the connection closes without an answer)"),
                        int(RuleAction::Failure::Close));
    m_failWith->addItem(tr("timeout (no answer; held until the client gives up)"),
                        int(RuleAction::Failure::Timeout));
    m_failWith->setItemData(0, tr("Portico answers the status itself, with a body naming the rule"),
                            Qt::ToolTipRole);
    m_failWith->setItemData(1, tr("Nothing is sent; the connection (HTTP/2: the stream) is reset"),
                            Qt::ToolTipRole);
    m_failWith->setItemData(2, tr("The connection closes without an answer"), Qt::ToolTipRole);
    m_failWith->setItemData(3, tr("No answer: the request is held until the client gives up"),
                            Qt::ToolTipRole);
    narrow(m_failWith);
    m_failStatus = new QSpinBox;
    m_failStatus->setObjectName("failStatus");
    m_failStatus->setRange(200, 599);
    failForm->addRow(tr("Rate"), m_failRate);
    failForm->addRow(tr("With"), m_failWith);
    failForm->addRow(tr("Status"), m_failStatus);
    connect(m_failRate, &QDoubleSpinBox::valueChanged, this, &RulesPage::commitAction);
    connect(m_failWith, &QComboBox::currentIndexChanged, this, &RulesPage::commitAction);
    connect(m_failStatus, &QSpinBox::valueChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(failPage);

    // map_local: a file or folder, shown as the file writes it (relative to the config's folder).
    auto localPage = new QWidget;
    auto localForm = new QFormLayout(localPage);
    localForm->setContentsMargins(0, 0, 0, 0);
    m_mapLocal = new QLineEdit;
    m_mapLocal->setObjectName("mapLocal");
    m_mapLocal->setPlaceholderText("./dev/app.js");
    m_mapLocal->setToolTip(tr("A file answers every matching request; a folder serves the request's path "
                              "below the rule's path: prefix. Relative to the config file's folder."));
    m_mapLocalBrowse = new QToolButton;
    m_mapLocalBrowse->setObjectName("mapLocalBrowse");
    m_mapLocalBrowse->setText(tr("Browse…"));
    m_mapLocalBrowse->setPopupMode(QToolButton::InstantPopup);
    auto browseMenu = new QMenu(m_mapLocalBrowse);
    connect(browseMenu->addAction(tr("File…")), &QAction::triggered, this, [this] { browseMapLocal(false); });
    connect(browseMenu->addAction(tr("Folder…")), &QAction::triggered, this,
            [this] { browseMapLocal(true); });
    m_mapLocalBrowse->setMenu(browseMenu);
    auto localRow = new QHBoxLayout;
    localRow->addWidget(m_mapLocal, 1);
    localRow->addWidget(m_mapLocalBrowse);
    localForm->addRow(tr("File or folder"), localRow);
    connect(m_mapLocal, &QLineEdit::textChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(localPage);

    // map_remote: SCHEME://HOST[:PORT].
    auto remotePage = new QWidget;
    auto remoteForm = new QFormLayout(remotePage);
    remoteForm->setContentsMargins(0, 0, 0, 0);
    m_mapRemote = new QLineEdit;
    m_mapRemote->setObjectName("mapRemote");
    m_mapRemote->setPlaceholderText("http://127.0.0.1:3000");
    m_mapRemote->setToolTip(tr("http://, h2c:// or https:// HOST[:PORT] without a path; the request keeps "
                               "its path and query, Host becomes this origin's"));
    remoteForm->addRow(tr("Origin"), m_mapRemote);
    connect(m_mapRemote, &QLineEdit::textChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(remotePage);

    // throttle: a Chrome DevTools preset (its values shown, not editable) or custom values.
    auto throttlePage = new QWidget;
    auto throttleForm = new QFormLayout(throttlePage);
    throttleForm->setContentsMargins(0, 0, 0, 0);
    m_throttlePreset = new QComboBox;
    m_throttlePreset->setObjectName("throttlePreset");
    m_throttlePreset->addItem(tr("Custom"), QString());
    for (const char* preset : kThrottlePresets)
        m_throttlePreset->addItem(preset, QString(preset));
    m_throttlePreset->setToolTip(tr("Chrome DevTools' network throttling presets; Custom: the values below"));
    // Numbers only (C locale: a '.' for decimals), as the file writes them.
    auto number = [](const QString& name, const QString& placeholder, const QString& tip) {
        auto edit = new QLineEdit;
        edit->setObjectName(name);
        edit->setPlaceholderText(placeholder);
        edit->setToolTip(tip);
        static const QRegularExpression re(QStringLiteral("\\d{0,9}(\\.\\d{0,3})?"));
        edit->setValidator(new QRegularExpressionValidator(re, edit));
        return edit;
    };
    m_throttleLatency =
        number("throttleLatency", "0", tr("Added before the response's first byte, in milliseconds"));
    m_throttleDown = number("throttleDown", tr("not limited"),
                            tr("The response's bytes to the client, in kbit/s (1000 bits a second); "
                               "empty or 0: not limited"));
    m_throttleUp = number("throttleUp", tr("not limited"),
                          tr("The request body's bytes onward, in kbit/s (1000 bits a second); empty or "
                             "0: not limited"));
    throttleForm->addRow(tr("Preset"), m_throttlePreset);
    throttleForm->addRow(tr("Latency (ms)"), m_throttleLatency);
    throttleForm->addRow(tr("Down (kbit/s)"), m_throttleDown);
    throttleForm->addRow(tr("Up (kbit/s)"), m_throttleUp);
    connect(m_throttlePreset, &QComboBox::currentIndexChanged, this, &RulesPage::commitAction);
    for (QLineEdit* edit : {m_throttleLatency, m_throttleDown, m_throttleUp})
        connect(edit, &QLineEdit::textChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(throttlePage);

    // replace_body: a PCRE2 regex and its replacement.
    auto replacePage = new QWidget;
    auto replaceForm = new QFormLayout(replacePage);
    replaceForm->setContentsMargins(0, 0, 0, 0);
    m_replaceRegex = new QLineEdit;
    m_replaceRegex->setObjectName("replaceRegex");
    m_replaceRegex->setPlaceholderText("\"beta\":false");
    m_replaceRegex->setToolTip(
        tr("A PCRE2 regex (as a route's ~ path); every match in the body is replaced"));
    m_replaceWith = new QLineEdit;
    m_replaceWith->setObjectName("replaceWith");
    m_replaceWith->setPlaceholderText("\"beta\":true");
    m_replaceWith->setToolTip(tr("PCRE2 substitution: $1 or ${name} for a group, $$ for a dollar"));
    replaceForm->addRow(tr("Regex"), m_replaceRegex);
    replaceForm->addRow(tr("With"), m_replaceWith);
    connect(m_replaceRegex, &QLineEdit::textChanged, this, &RulesPage::commitAction);
    connect(m_replaceWith, &QLineEdit::textChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(replacePage);

    // breakpoint: how long a paused exchange waits before it goes on unchanged.
    auto breakpointPage = new QWidget;
    auto breakpointForm = new QFormLayout(breakpointPage);
    breakpointForm->setContentsMargins(0, 0, 0, 0);
    m_breakpointTimeout = new QLineEdit;
    m_breakpointTimeout->setObjectName("breakpointTimeout");
    m_breakpointTimeout->setPlaceholderText("5m");
    m_breakpointTimeout->setToolTip(
        tr("How long a paused exchange waits for you before it goes on unchanged: "
           "1s to 24h, e.g. 30s, 5m or 1h (empty: 5m)"));
    auto breakpointHint = new QLabel(tr("Matching exchanges wait in the Paused queue (request stage: before "
                                        "they are sent on; response stage: before the client gets the "
                                        "answer) until you resume, answer or abort them."));
    breakpointHint->setWordWrap(true);
    breakpointHint->setEnabled(false);
    breakpointForm->addRow(tr("Timeout"), m_breakpointTimeout);
    breakpointForm->addRow(breakpointHint);
    connect(m_breakpointTimeout, &QLineEdit::textChanged, this, &RulesPage::commitAction);
    m_actionForms->addWidget(breakpointPage); // the pages are in RuleAction::Kind's order

    v->addWidget(m_actionForms, 1);
    v->addWidget(errorLabel("action"));

    connect(m_actions, &QListWidget::currentRowChanged, this, [this](int row) {
        if (m_loading) return;
        m_action = row;
        loadActionForm();
        showErrors();
    });
    connect(m_kind, &QComboBox::currentIndexChanged, this, [this] {
        if (m_loading || m_current < 0 || m_action < 0) return;
        RuleAction& a = m_rules[m_current].actions[m_action];
        a.kind = RuleAction::Kind(m_kind->currentData().toInt());
        fitTyped();
        m_typed[m_current][m_action].reset(); // text typed for the kind before
        // A kind chosen for the first time starts with an example to edit.
        if (a.kind == RuleAction::Kind::SetHeader && a.set.empty()) a.set = {{"X-Debug", "1"}};
        if (a.kind == RuleAction::Kind::RemoveHeader && a.remove.empty()) a.remove = {"Cookie"};
        if (a.kind == RuleAction::Kind::Throttle && a.throttlePreset.empty() &&
            a.throttleLatency.count() == 0 && a.throttleDown == 0 && a.throttleUp == 0)
            a.throttlePreset = kThrottlePresets[0]; // its values: commitAction reads them
        loadActionForm();
        commitAction();
    });
    return box;
}

bool RulesPage::hasChanges() const { return m_rules != m_published || hasTyped(); }

void RulesPage::fitTyped() {
    m_typed.resize(m_rules.size());
    for (std::size_t i = 0; i < m_rules.size(); ++i)
        m_typed[i].resize(m_rules[i].actions.size());
}

bool RulesPage::hasTyped() const {
    for (std::size_t i = 0; i < m_typed.size() && i < m_rules.size(); ++i)
        for (std::size_t j = 0; j < m_typed[i].size() && j < m_rules[i].actions.size(); ++j)
            if (m_typed[i][j] && (m_rules[i].actions[j].kind == RuleAction::Kind::MapRemote ||
                                  m_rules[i].actions[j].kind == RuleAction::Kind::Breakpoint))
                return true;
    return false;
}

QString RulesPage::shownPath(const RuleAction& a) const { return q(writtenValue(a, m_server->baseDir())); }

QString RulesPage::actionText(int rule, int action) const {
    const RuleAction& a = m_rules[rule].actions[action];
    if (rule < int(m_typed.size()) && action < int(m_typed[rule].size()) && m_typed[rule][action]) {
        if (a.kind == RuleAction::Kind::MapRemote) return tr("map_remote %1").arg(q(*m_typed[rule][action]));
        if (a.kind == RuleAction::Kind::Breakpoint)
            return tr("breakpoint (timeout %1)").arg(q(*m_typed[rule][action]));
    }
    return actionSummary(a, m_server->baseDir());
}

QString RulesPage::actionsText(int rule) const {
    QStringList parts;
    for (int i = 0; i < int(m_rules[rule].actions.size()); ++i)
        parts << actionText(rule, i);
    return parts.join("; ");
}

void RulesPage::browseMapLocal(bool folder) {
    // The dialog's answer goes into the field as typing would (textChanged commits it).
    const QString chosen =
        folder ? QFileDialog::getExistingDirectory(this, tr("Answer from folder"), m_server->baseDir())
               : QFileDialog::getOpenFileName(this, tr("Answer from file"), m_server->baseDir());
    if (chosen.isEmpty()) return;
    RuleAction a;
    a.kind = RuleAction::Kind::MapLocal;
    a.mapLocal = s(QDir::cleanPath(chosen));
    m_mapLocal->setText(shownPath(a));
}

bool RulesPage::canApply() const { return m_server->config() && m_errors.isEmpty() && hasChanges(); }

QStringList RulesPage::problems() const {
    QStringList out;
    for (auto it = m_errors.begin(); it != m_errors.end(); ++it)
        out << it.key() + ": " + it.value();
    return out;
}

void RulesPage::select(int row) {
    if (row < 0 || row >= int(m_rules.size())) row = -1;
    m_loading = true;
    m_table->setCurrentCell(row, row < 0 ? -1 : int(Name));
    m_loading = false;
    if (row != m_current) {
        m_current = row;
        m_action = row >= 0 && !m_rules[row].actions.empty() ? 0 : -1;
    }
    if (row >= 0) m_table->scrollToItem(m_table->item(row, Name));
    loadForm();
    showErrors();
}

QString RulesPage::matchFor(const capture::Exchange& e) {
    QStringList terms;
    // Quoted when it has white space; the language has no escape for '"', so those are dropped.
    auto term = [&terms](const QString& key, QString value) {
        value.remove('"');
        if (value.isEmpty()) return;
        static const QRegularExpression space(QStringLiteral("\\s"));
        terms << (value.contains(space) ? key + ":\"" + value + "\"" : key + ":" + value);
    };
    term("host", q(e.authority));
    std::string_view path = e.target;
    // An absolute-form target (a forward proxy's request): the path starts after the authority.
    if (const auto scheme = path.find("://"); scheme != std::string_view::npos && !path.starts_with('/')) {
        const auto slash = path.find('/', scheme + 3);
        path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
    }
    path = path.substr(0, path.find_first_of("?#"));
    if (path.starts_with('/')) term("path", q(std::string(path))); // not CONNECT's host:port
    term("method", q(e.method));
    return terms.join(' ');
}

QString RulesPage::uniqueName(const QString& base) const {
    auto taken = [this](const QString& name) {
        return std::any_of(m_rules.begin(), m_rules.end(), [&](const Rule& r) { return q(r.name) == name; });
    };
    QString name = base;
    for (int n = 2; taken(name); ++n)
        name = QString("%1 (%2)").arg(base).arg(n);
    return name;
}

void RulesPage::addRule() { addRuleMatching(QString(), tr("new rule")); }

void RulesPage::addRuleMatching(const QString& match, const QString& name) {
    Rule r;
    r.name = s(uniqueName(name.isEmpty() ? tr("new rule") : name));
    r.stage = Rule::Stage::Request;
    r.match = s(match);
    RuleAction a;
    a.kind = RuleAction::Kind::SetHeader;
    a.set = {{"X-Debug", "1"}};
    r.actions.push_back(a);
    fitTyped();
    m_rules.push_back(r);
    m_origin.push_back(-1);
    m_typed.emplace_back(1);
    m_action = 0;
    rebuildTable();
    select(int(m_rules.size()) - 1);
    validate();
    m_name->setFocus();
    m_name->selectAll();
}

void RulesPage::removeSelected() {
    if (m_current < 0) return;
    const int row = m_current;
    fitTyped();
    m_rules.erase(m_rules.begin() + row);
    m_origin.erase(m_origin.begin() + row);
    m_typed.erase(m_typed.begin() + row);
    m_current = -1;
    rebuildTable();
    select(std::min(row, int(m_rules.size()) - 1));
    validate();
}

void RulesPage::moveUp() { moveRule(-1); }
void RulesPage::moveDown() { moveRule(1); }

void RulesPage::moveRule(int delta) {
    const int from = m_current, to = m_current + delta;
    if (from < 0 || to < 0 || to >= int(m_rules.size())) return;
    fitTyped();
    std::swap(m_rules[from], m_rules[to]);
    std::swap(m_origin[from], m_origin[to]);
    std::swap(m_typed[from], m_typed[to]);
    rebuildTable();
    select(to);
    validate();
}

void RulesPage::rebuildTable() {
    const bool was = m_loading;
    m_loading = true;
    const int keep = m_current;
    m_table->setRowCount(int(m_rules.size()));
    for (int row = 0; row < int(m_rules.size()); ++row) {
        for (int c = 0; c < ColumnCount; ++c) {
            if (m_table->item(row, c)) continue;
            auto item = new QTableWidgetItem;
            Qt::ItemFlags flags = Qt::ItemIsSelectable | Qt::ItemIsEnabled;
            if (c == On) flags |= Qt::ItemIsUserCheckable;
            item->setFlags(flags);
            if (c == Matched) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, c, item);
        }
        updateRow(row);
    }
    m_loading = was;
    m_current = keep < int(m_rules.size()) ? keep : -1;
    refreshMatches();
    updateButtons();
}

void RulesPage::updateRow(int row) {
    if (row < 0 || row >= int(m_rules.size()) || !m_table->item(row, On)) return;
    const bool was = m_loading;
    m_loading = true;
    const Rule& r = m_rules[row];
    m_table->item(row, On)->setCheckState(r.enabled ? Qt::Checked : Qt::Unchecked);
    m_table->item(row, Name)->setText(q(r.name));
    m_table->item(row, Stage)->setText(r.stage == Rule::Stage::Request ? tr("request") : tr("response"));
    m_table->item(row, Match)->setText(r.match.empty() ? tr("(every exchange)") : q(r.match));
    m_table->item(row, Actions)->setText(actionsText(row));
    m_table->item(row, Actions)->setToolTip(actionsText(row).replace("; ", "\n"));
    // A switched-off rule is greyed; one with a problem is red and lists it in its tooltip.
    QStringList mine;
    const QString prefix = QString("rules[%1]").arg(row);
    for (auto it = m_errors.begin(); it != m_errors.end(); ++it)
        if (it.key() == prefix || it.key().startsWith(prefix + '.')) mine << it.key() + ": " + it.value();
    const QBrush brush = !mine.isEmpty() ? QBrush(QColor(kErrorColor))
                         : r.enabled     ? QBrush()
                                         : palette().brush(QPalette::Disabled, QPalette::Text);
    for (int c = Name; c < ColumnCount; ++c) {
        m_table->item(row, c)->setForeground(brush);
        if (c != Actions) m_table->item(row, c)->setToolTip(mine.join('\n'));
    }
    m_table->item(row, Match)->setToolTip(mine.isEmpty() ? q(r.match) : mine.join('\n'));
    m_loading = was;
}

void RulesPage::onTableSelection() {
    if (m_loading) return;
    const int row = m_table->currentRow();
    if (row == m_current) return;
    m_current = row;
    m_action = m_current >= 0 && !m_rules[m_current].actions.empty() ? 0 : -1;
    loadForm();
    showErrors();
}

void RulesPage::onTableItemChanged(int row, int column) {
    if (m_loading || column != On || row < 0 || row >= int(m_rules.size())) return;
    m_rules[row].enabled = m_table->item(row, On)->checkState() == Qt::Checked;
    if (row == m_current) {
        m_loading = true;
        m_enabled->setChecked(m_rules[row].enabled);
        m_loading = false;
    }
    validate();
}

void RulesPage::loadForm() {
    updateButtons();
    if (m_current < 0 || m_current >= int(m_rules.size())) {
        m_editor->setCurrentIndex(0);
        return;
    }
    m_editor->setCurrentIndex(1);
    m_loading = true;
    const Rule& r = m_rules[m_current];
    if (m_name->text() != q(r.name)) m_name->setText(q(r.name));
    m_enabled->setChecked(r.enabled);
    m_stage->setCurrentIndex(m_stage->findData(int(r.stage)));
    if (m_match->text() != q(r.match)) m_match->setText(q(r.match));
    m_loading = false;
    loadActionList();
}

void RulesPage::loadActionList() {
    m_loading = true;
    const Rule& r = m_rules[m_current];
    m_actions->clear();
    for (int i = 0; i < int(r.actions.size()); ++i)
        m_actions->addItem(actionText(m_current, i));
    if (m_action >= int(r.actions.size())) m_action = int(r.actions.size()) - 1;
    m_actions->setCurrentRow(m_action);
    m_loading = false;
    loadActionForm();
}

void RulesPage::loadActionForm() {
    const bool have = m_current >= 0 && m_action >= 0 && m_action < int(m_rules[m_current].actions.size());
    m_kind->setEnabled(have);
    m_actionForms->setEnabled(have);
    m_removeAction->setEnabled(have);
    m_actionUp->setEnabled(have && m_action > 0);
    m_actionDown->setEnabled(have && m_action + 1 < int(m_rules[m_current].actions.size()));
    m_actionForms->setVisible(have);
    if (!have) return;
    const RuleAction& a = m_rules[m_current].actions[m_action];
    m_loading = true;
    m_kind->setCurrentIndex(m_kind->findData(int(a.kind)));
    m_actionForms->setCurrentIndex(int(a.kind));
    m_setHeaders->setRowCount(0);
    for (const auto& [name, value] : a.set) {
        const int row = m_setHeaders->rowCount();
        m_setHeaders->insertRow(row);
        m_setHeaders->setItem(row, 0, new QTableWidgetItem(q(name)));
        m_setHeaders->setItem(row, 1, new QTableWidgetItem(q(value)));
    }
    m_removeHeaders->clear();
    for (const std::string& name : a.remove) {
        auto item = new QListWidgetItem(q(name));
        item->setFlags(item->flags() | Qt::ItemIsEditable);
        m_removeHeaders->addItem(item);
    }
    m_failRate->setValue(a.rate);
    m_failWith->setCurrentIndex(m_failWith->findData(int(a.failure)));
    m_failStatus->setValue(a.failStatus);
    m_failStatus->setEnabled(a.failure == RuleAction::Failure::Status);
    fitTyped();
    const auto& typed = m_typed[m_current][m_action];
    m_mapLocal->setText(a.kind == RuleAction::Kind::MapLocal ? shownPath(a) : QString());
    m_mapRemote->setText(a.kind != RuleAction::Kind::MapRemote ? QString()
                         : typed                               ? q(*typed)
                                                               : q(writtenValue(a, m_server->baseDir())));
    showThrottle(a);
    m_replaceRegex->setText(q(a.regex));
    m_replaceWith->setText(q(a.replaceWith));
    m_breakpointTimeout->setText(a.kind != RuleAction::Kind::Breakpoint ? QString()
                                 : typed                                ? q(*typed)
                                         : q(config::formatDuration(a.breakpointTimeout)));
    m_loading = false;
}

void RulesPage::showThrottle(const RuleAction& a) {
    const bool was = m_loading;
    m_loading = true;
    const int preset = m_throttlePreset->findData(q(a.throttlePreset));
    m_throttlePreset->setCurrentIndex(std::max(preset, 0));
    m_throttleLatency->setText(a.throttleLatency.count() > 0 ? ms(a.throttleLatency) : QString());
    m_throttleDown->setText(a.throttleDown > 0 ? kbit(a.throttleDown) : QString());
    m_throttleUp->setText(a.throttleUp > 0 ? kbit(a.throttleUp) : QString());
    for (QLineEdit* edit : {m_throttleLatency, m_throttleDown, m_throttleUp})
        edit->setEnabled(a.throttlePreset.empty());
    m_loading = was;
}

void RulesPage::commitRule() {
    if (m_loading || m_current < 0) return;
    Rule& r = m_rules[m_current];
    r.name = s(m_name->text());
    r.enabled = m_enabled->isChecked();
    r.stage = Rule::Stage(m_stage->currentData().toInt());
    r.match = s(m_match->text());
    updateRow(m_current);
    validate();
}

void RulesPage::commitAction() {
    if (m_loading || m_current < 0 || m_action < 0) return;
    RuleAction& a = m_rules[m_current].actions[m_action];
    a.kind = RuleAction::Kind(m_kind->currentData().toInt());
    switch (a.kind) {
    case RuleAction::Kind::SetHeader:
        // Rows as typed, an empty name included: the reader says what is wrong with it.
        a.set.clear();
        for (int row = 0; row < m_setHeaders->rowCount(); ++row) {
            auto text = [&](int c) {
                return m_setHeaders->item(row, c) ? m_setHeaders->item(row, c)->text() : "";
            };
            a.set.emplace_back(s(text(0).trimmed()), s(text(1)));
        }
        break;
    case RuleAction::Kind::RemoveHeader:
        a.remove.clear();
        for (int i = 0; i < m_removeHeaders->count(); ++i)
            a.remove.push_back(s(m_removeHeaders->item(i)->text().trimmed()));
        break;
    case RuleAction::Kind::Fail:
        a.rate = m_failRate->value();
        a.failure = RuleAction::Failure(m_failWith->currentData().toInt());
        a.failStatus = m_failStatus->value();
        m_failStatus->setEnabled(a.failure == RuleAction::Failure::Status);
        break;
    case RuleAction::Kind::MapLocal:
        // What the reader makes of the text (an absolute path), or the text itself when it refuses
        // it, so that the read-back gives its message.
        if (auto read = readAction("map_local", m_mapLocal->text(), m_server->baseDir()))
            a.mapLocal = read->mapLocal;
        else
            a.mapLocal = s(m_mapLocal->text());
        break;
    case RuleAction::Kind::MapRemote:
        fitTyped();
        if (auto read = readAction("map_remote", m_mapRemote->text(), m_server->baseDir())) {
            a.mapRemote = read->mapRemote;
            m_typed[m_current][m_action].reset();
        } else {
            if (a.mapRemote.upstreams.size() != 1) a.mapRemote = placeholderRemote();
            m_typed[m_current][m_action] = s(m_mapRemote->text());
        }
        break;
    case RuleAction::Kind::Throttle:
        if (const QString preset = m_throttlePreset->currentData().toString(); !preset.isEmpty()) {
            // The preset's values as the reader has them; the fields show them, not editable.
            if (auto read = readAction("throttle", preset, m_server->baseDir())) {
                a.throttleLatency = read->throttleLatency;
                a.throttleDown = read->throttleDown;
                a.throttleUp = read->throttleUp;
            }
            a.throttlePreset = s(preset);
            showThrottle(a);
        } else {
            // Custom: the fields as typed (the preset's values they showed are the start).
            a.throttlePreset.clear();
            a.throttleLatency = Duration(std::llround(fieldNumber(m_throttleLatency) * 1e6));
            a.throttleDown = std::uint64_t(std::llround(fieldNumber(m_throttleDown) * 1000 / 8));
            a.throttleUp = std::uint64_t(std::llround(fieldNumber(m_throttleUp) * 1000 / 8));
            for (QLineEdit* edit : {m_throttleLatency, m_throttleDown, m_throttleUp})
                edit->setEnabled(true);
        }
        break;
    case RuleAction::Kind::ReplaceBody:
        a.regex = s(m_replaceRegex->text());
        a.replaceWith = s(m_replaceWith->text());
        break;
    case RuleAction::Kind::Breakpoint:
        // The timeout the reader makes of the text; when it refuses it, the action keeps its last
        // good one and the text is kept as typed, so that the read-back gives the reader's message.
        fitTyped();
        if (auto read =
                readAction("breakpoint", breakpointValue(m_breakpointTimeout->text()), m_server->baseDir())) {
            a.breakpointTimeout = read->breakpointTimeout;
            m_typed[m_current][m_action].reset();
        } else {
            m_typed[m_current][m_action] = s(m_breakpointTimeout->text().trimmed());
        }
        break;
    }
    if (a.kind != RuleAction::Kind::MapRemote && a.kind != RuleAction::Kind::Breakpoint) {
        fitTyped();
        m_typed[m_current][m_action].reset();
    }
    if (QListWidgetItem* item = m_actions->item(m_action)) item->setText(actionText(m_current, m_action));
    updateRow(m_current);
    validate();
}

void RulesPage::addAction() {
    if (m_current < 0) return;
    RuleAction a;
    a.kind = RuleAction::Kind::SetHeader;
    a.set = {{"X-Debug", "1"}};
    fitTyped();
    auto& actions = m_rules[m_current].actions;
    actions.push_back(a);
    m_typed[m_current].emplace_back();
    m_action = int(actions.size()) - 1;
    loadActionList();
    updateRow(m_current);
    validate();
}

void RulesPage::removeAction() {
    if (m_current < 0 || m_action < 0) return;
    fitTyped();
    auto& actions = m_rules[m_current].actions;
    actions.erase(actions.begin() + m_action);
    m_typed[m_current].erase(m_typed[m_current].begin() + m_action);
    m_action = std::min(m_action, int(actions.size()) - 1);
    loadActionList();
    updateRow(m_current);
    validate();
}

void RulesPage::moveAction(int delta) {
    if (m_current < 0 || m_action < 0) return;
    auto& actions = m_rules[m_current].actions;
    const int to = m_action + delta;
    if (to < 0 || to >= int(actions.size())) return;
    fitTyped();
    std::swap(actions[m_action], actions[to]);
    std::swap(m_typed[m_current][m_action], m_typed[m_current][to]);
    m_action = to;
    loadActionList();
    updateRow(m_current);
    validate();
}

std::shared_ptr<config::Config> RulesPage::draftConfig() const {
    const auto inForce = m_server->config();
    auto cfg = inForce ? std::make_shared<config::Config>(*inForce) : std::make_shared<config::Config>();
    cfg->rules = m_rules;
    return cfg;
}

void RulesPage::validate() {
    fitTyped();
    m_errors.clear();
    const auto draft = draftConfig();
    auto take = [this](const std::vector<config::ConfigError>& errors) {
        for (const config::ConfigError& e : errors)
            if (const QString path = q(e.path); path.startsWith("rules[") && !m_errors.contains(path))
                m_errors.insert(path, q(e.message));
    };
    // The model's checks (the match in the filter language for its stage, the stage) and the
    // reader's (actions: header names and values, fields a rule may not touch, at least one), the
    // loader's own code both: nothing is checked twice or differently here.
    take(validate::validate(*draft, config::SourceMap{}, validate::Checks::NoFiles));
    take(readBack(*draft, m_server->baseDir(), m_typed).errors);
    // The rules alone get the checks of the disk as well (map_local's file or folder must exist),
    // last: the reader's message for a field comes first, as when the file is loaded. The rest of
    // the config in force was checked when it was loaded.
    config::Config rulesOnly;
    rulesOnly.rules = draft->rules;
    take(validate::validate(rulesOnly, config::SourceMap{}, validate::Checks::All));
    showErrors();
}

void RulesPage::showErrors() {
    for (int row = 0; row < int(m_rules.size()); ++row)
        updateRow(row);
    // The selected rule's errors under the fields they name.
    QMap<QString, QStringList> shown;
    for (auto it = m_errors.begin(); it != m_errors.end(); ++it) {
        const auto [rule, action] = rulePathIndex(it.key());
        if (rule != m_current || rule < 0) continue;
        const QString rest = it.key().mid(QString("rules[%1]").arg(rule).size());
        QString key = "rule";
        if (action >= 0)
            key = action == m_action ? "action" : "actions";
        else if (rest == ".name" || rest == ".stage" || rest == ".match" || rest.startsWith(".actions"))
            key = rest.startsWith(".actions") ? "actions" : rest.mid(1);
        QString message = it.value();
        if (key == "actions" && action >= 0) message = tr("action %1: %2").arg(action + 1).arg(message);
        shown[key] << message;
    }
    for (auto it = m_errorLabels.begin(); it != m_errorLabels.end(); ++it) {
        const QString text = shown.value(it.key()).join('\n');
        it.value()->setText(text);
        it.value()->setVisible(!text.isEmpty());
    }
    const QString red = QString("QLineEdit, QComboBox { border: 1px solid %1; }").arg(kErrorColor);
    m_match->setStyleSheet(shown.contains("match") ? red : QString());
    m_stage->setStyleSheet(shown.contains("stage") ? red : QString());
    if (m_current >= 0)
        for (int i = 0; i < m_actions->count(); ++i) {
            const QString prefix = QString("rules[%1].actions[%2]").arg(m_current).arg(i);
            const bool bad = std::any_of(m_errors.keyBegin(), m_errors.keyEnd(), [&](const QString& k) {
                return k == prefix || k.startsWith(prefix + '.');
            });
            m_actions->item(i)->setForeground(bad ? QBrush(QColor(kErrorColor)) : QBrush());
        }

    // The line under the table: the first problem (with the rule's name), or "unapplied".
    const QStringList all = problems();
    if (all.isEmpty()) {
        m_problems->setText(hasChanges() ? tr("Unapplied changes.") : QString());
        m_problems->setStyleSheet(QString());
    } else {
        const auto [rule, action] = rulePathIndex(m_errors.firstKey());
        const QString who = rule >= 0 && rule < int(m_rules.size()) && !m_rules[rule].name.empty()
                                ? tr("rule %1 “%2”").arg(rule + 1).arg(q(m_rules[rule].name))
                                : tr("rule %1").arg(rule + 1);
        const QString first = who + ": " + m_errors.first();
        m_problems->setText(all.size() == 1 ? tr("1 problem: %1").arg(first)
                                            : tr("%1 problems: %2").arg(all.size()).arg(first));
        m_problems->setToolTip(all.join('\n'));
        m_problems->setStyleSheet(QString("QLabel { color: %1; }").arg(kErrorColor));
    }
    updateButtons();
}

void RulesPage::updateButtons() {
    m_apply->setEnabled(canApply());
    m_revert->setEnabled(hasChanges());
    m_remove->setEnabled(m_current >= 0);
    m_up->setEnabled(m_current > 0);
    m_down->setEnabled(m_current >= 0 && m_current + 1 < int(m_rules.size()));
    emit changesChanged(hasChanges());
}

bool RulesPage::apply() {
    validate();
    if (!canApply()) return false;
    // The config in force now (not the Sites tab's draft) with only the rules replaced.
    const auto cfg = draftConfig();
    QString error;
    const bool ok = m_server->apply(cfg, &error);
    if (!ok) {
        m_notice->setText(tr("Not applied: %1").arg(error));
        m_notice->setVisible(true);
        return false;
    }
    m_notice->setVisible(false);
    emit notice(
        m_server->configPath().isEmpty()
            ? tr("Rules applied (live).")
            : tr("Rules applied (live) and saved to %1.").arg(QFileInfo(m_server->configPath()).fileName()));
    return true;
}

void RulesPage::revert() {
    m_rules = m_published;
    m_typed.clear();
    m_origin.resize(m_rules.size());
    for (std::size_t i = 0; i < m_origin.size(); ++i)
        m_origin[i] = int(i);
    m_notice->setVisible(false);
    rebuildTable();
    select(std::min(m_current, int(m_rules.size()) - 1));
    validate();
}

void RulesPage::onServerConfigChanged() {
    const auto cfg = m_server->config();
    if (!cfg) return;
    const bool pending = hasChanges();
    const std::vector<Rule> before = m_published;
    m_published = cfg->rules;
    if (pending && (cfg->rules != m_rules || hasTyped())) {
        // Keep the user's edits. Rules that came from the old list find their count by name.
        for (int& origin : m_origin) {
            if (origin < 0 || origin >= int(before.size())) continue;
            const auto it = std::find_if(m_published.begin(), m_published.end(),
                                         [&](const Rule& r) { return r.name == before[origin].name; });
            origin = it == m_published.end() ? -1 : int(it - m_published.begin());
        }
        m_notice->setText(tr("The rules in force changed (the file, or the Sites tab's Apply). Your "
                             "unapplied edits are kept; Revert shows the rules in force."));
        m_notice->setVisible(true);
        refreshMatches();
        validate();
        return;
    }
    m_rules = cfg->rules;
    m_typed.clear();
    m_origin.resize(m_rules.size());
    for (std::size_t i = 0; i < m_origin.size(); ++i)
        m_origin[i] = int(i);
    m_notice->setVisible(false);
    rebuildTable();
    const int row = std::min(std::max(m_current, 0), int(m_rules.size()) - 1);
    m_current = -1; // the form and its first action load anew
    select(row);
    validate();
}

void RulesPage::refreshMatches() {
    // For each rule in force (same order and size); a rule added or moved in here since keeps the
    // count of the rule it came from (m_origin).
    m_matches = m_server->engine().ruleMatches();
    const bool was = m_loading;
    m_loading = true;
    for (int row = 0; row < m_table->rowCount() && row < int(m_origin.size()); ++row) {
        QTableWidgetItem* item = m_table->item(row, Matched);
        if (!item) continue;
        const int origin = m_origin[row];
        const bool known = origin >= 0 && origin < int(m_matches.size());
        item->setText(known ? QLocale().toString(qulonglong(m_matches[origin])) : QStringLiteral("—"));
        item->setToolTip(known ? QString() : tr("Not applied yet"));
    }
    m_loading = was;
}

void RulesPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    refreshMatches();
    m_matchesTimer->start();
}

void RulesPage::hideEvent(QHideEvent* event) {
    QWidget::hideEvent(event);
    m_matchesTimer->stop();
}

} // namespace portico::ui
