// The Rules tab: the config's `rules:` in a table (enable switch, match, actions, matched count), a
// form for the selected rule and its actions, Apply (live) and Revert.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/config/config.h>

#include <QMap>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QTimer;
class QToolButton;

namespace portico::ui {

class ServerController;

/// Edits a copy of the rules in force. Every edit is checked by the core's own loader: the config in
/// force with the edited rules is validated (validate::validate, no disk checks) and read back as its
/// file would be (the reader checks the actions: header names, values, fields a rule may not touch);
/// the errors for `rules[...]` show under the field they name and keep Apply disabled. Apply
/// publishes the config in force with only `rules` replaced (ServerController::apply, which also
/// saves the file), so an unapplied draft of the Sites tab is not published with it.
///
/// map_local and map_remote take the text typed as the loader reads it (the reader turns it into the
/// action: an absolute path, an upstream). A map_remote URL the reader refuses cannot be held by
/// the model, so it is kept as typed and put into the YAML that is read back in its place: its
/// message is the loader's and Apply stays off.
///
/// throttle takes a Chrome DevTools preset ("Slow 3G", ...) or custom values; a preset's values are
/// the reader's own (`throttle: "Slow 3G"` read as the loader reads it), shown in the disabled
/// fields. Latency is typed in ms, down and up in kbit/s (empty or 0: not limited).
///
/// breakpoint takes its timeout as the file writes it ("30s", "5m"; empty: the default 5m), read by
/// the loader's reader as map_remote's URL is: a timeout the reader refuses (no unit, outside 1s..24h)
/// is kept as typed, as a refused URL is, and its message is the reader's.
class RulesPage : public QWidget {
    Q_OBJECT

public:
    enum Column { On, Name, Stage, Match, Actions, Matched, ColumnCount };
    static constexpr int kMatchesMs = 1000; ///< how often the Matched column is read while shown

    explicit RulesPage(ServerController* server, QWidget* parent = nullptr);

    /// The rules as edited (what Apply publishes once they have no problem).
    const std::vector<config::Rule>& rules() const { return m_rules; }
    /// Whether the edited rules differ from the ones in force (source positions not compared), or a
    /// map_remote URL or a breakpoint timeout is typed that the loader refuses.
    bool hasChanges() const;
    bool canApply() const;
    /// Every current problem of the edited rules as "rules[N]...: message".
    QStringList problems() const;
    /// Selects rule `row` (its form shows it); -1 selects none.
    void select(int row);
    int currentRow() const { return m_current; }
    QTableWidget* table() const { return m_table; }

    /// `host:HOST path:PATH method:METHOD` for `exchange` (the path without its query; a term is
    /// left out when the exchange has no such value, values with spaces are quoted).
    static QString matchFor(const capture::Exchange& exchange);

public slots:
    bool apply();
    void revert();
    void addRule();
    /// Adds a request-stage rule matching `match` (named after it), selects it; not applied.
    void addRuleMatching(const QString& match, const QString& name = {});
    void removeSelected();
    void moveUp();
    void moveDown();
    /// Reads the engine's per-rule match counts into the Matched column (a timer does it every
    /// kMatchesMs while the page is shown).
    void refreshMatches();

signals:
    void notice(const QString& text);
    /// After every edit, apply and revert: whether the rules now differ from the ones in force.
    void changesChanged(bool unapplied);

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    QWidget* buildRuleForm();
    QWidget* buildActionForms();
    QLabel* errorLabel(const QString& key);

    void rebuildTable();
    void updateRow(int row);
    void onTableSelection();
    void onTableItemChanged(int row, int column);
    void loadForm();
    void loadActionList();
    void loadActionForm();
    /// The rule form → m_rules[m_current]; then validate().
    void commitRule();
    /// The selected action's form → its RuleAction; then validate().
    void commitAction();
    void addAction();
    void removeAction();
    void moveAction(int delta);
    void moveRule(int delta);
    /// Checks the edited rules with the core's loader (see the class comment) and shows the result.
    void validate();
    void showErrors();
    void updateButtons();
    void onServerConfigChanged();
    /// The edited rules in the config in force: what validate checks and Apply publishes.
    std::shared_ptr<config::Config> draftConfig() const;
    QString uniqueName(const QString& base) const;
    /// The list and table text of action `action` of rule `rule` (a refused map_remote URL or
    /// breakpoint timeout as typed).
    QString actionText(int rule, int action) const;
    QString actionsText(int rule) const;
    /// m_typed shaped as m_rules (entries for rules and actions it lacks are empty).
    void fitTyped();
    /// Whether an action holds text the reader refused (m_typed, for a kind that keeps it).
    bool hasTyped() const;
    /// The map_local path as the YAML writer writes it (relative to baseDir when under it).
    QString shownPath(const config::RuleAction& action) const;
    /// The map_local/map_remote field's text, after an edit or Browse.
    void commitMapLocal();
    /// The throttle form's fields from `action` (values, and enabled only for custom values).
    void showThrottle(const config::RuleAction& action);
    void browseMapLocal(bool folder);

    ServerController* m_server;
    std::vector<config::Rule> m_rules;
    /// For each edited rule, its index in the rules in force (-1: added here): the Matched column
    /// shows the engine's count of that entry.
    std::vector<int> m_origin;
    std::vector<config::Rule> m_published; ///< the rules in force when last loaded or applied
    std::vector<std::uint64_t> m_matches;  ///< the engine's last counts (rules in force order)
    /// [rule][action]: a map_remote URL or a breakpoint timeout as typed that the reader refused (the
    /// action itself keeps an upstream or a timeout the writer can write); nullopt when the action
    /// holds what was typed.
    std::vector<std::vector<std::optional<std::string>>> m_typed;
    QMap<QString, QString> m_errors; ///< path ("rules[1].match") → message, the core's
    int m_current = -1;
    int m_action = -1;
    bool m_loading = false;

    QTableWidget* m_table = nullptr;
    QPushButton* m_add = nullptr;
    QPushButton* m_remove = nullptr;
    QPushButton* m_up = nullptr;
    QPushButton* m_down = nullptr;
    QStackedWidget* m_editor = nullptr;
    QLineEdit* m_name = nullptr;
    QCheckBox* m_enabled = nullptr;
    QComboBox* m_stage = nullptr;
    QLineEdit* m_match = nullptr;
    QListWidget* m_actions = nullptr;
    QPushButton* m_addAction = nullptr;
    QPushButton* m_removeAction = nullptr;
    QPushButton* m_actionUp = nullptr;
    QPushButton* m_actionDown = nullptr;
    QComboBox* m_kind = nullptr;
    QStackedWidget* m_actionForms = nullptr;
    QTableWidget* m_setHeaders = nullptr;
    QListWidget* m_removeHeaders = nullptr;
    QDoubleSpinBox* m_failRate = nullptr;
    QComboBox* m_failWith = nullptr;
    QSpinBox* m_failStatus = nullptr;
    QLineEdit* m_mapLocal = nullptr;
    QToolButton* m_mapLocalBrowse = nullptr;
    QLineEdit* m_mapRemote = nullptr;
    QComboBox* m_throttlePreset = nullptr;
    QLineEdit* m_throttleLatency = nullptr; ///< ms
    QLineEdit* m_throttleDown = nullptr;    ///< kbit/s, empty = not limited
    QLineEdit* m_throttleUp = nullptr;      ///< kbit/s, empty = not limited
    QLineEdit* m_replaceRegex = nullptr;
    QLineEdit* m_replaceWith = nullptr;
    QLineEdit* m_breakpointTimeout = nullptr; ///< a duration as the file writes it ("5m")
    QMap<QString, QLabel*> m_errorLabels;     ///< "name", "stage", "match", "actions", "action"
    QLabel* m_notice = nullptr;
    QLabel* m_problems = nullptr;
    QPushButton* m_apply = nullptr;
    QPushButton* m_revert = nullptr;
    QTimer* m_matchesTimer = nullptr;
};

} // namespace portico::ui
