// The Sites tab: vhosts and their routes in a tree, a form per selection, Apply (live) and Revert.
#pragma once

#include <portico/config/config.h>
#include <portico/config/reader.h>
#include <portico/validate/load.h>

#include <QHash>
#include <QMap>
#include <QWidget>

#include <functional>
#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QTimer;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;
class QTreeWidget;
class QTreeWidgetItem;

namespace portico::ui {

class ServerController;

/// Edits a draft copy of the published config. Each edit is parsed field by field (a bad duration
/// or header line is an inline error under its field) and then checked whole by the core's own
/// loader, whose located errors ("vhosts[0].routes[1].respond.status: ...") are shown under the
/// field they name. Apply is enabled only when the draft differs from what is served and has no
/// error; it publishes the snapshot live (Engine::publish) and saves the YAML file.
class SitesPage : public QWidget {
    Q_OBJECT

public:
    explicit SitesPage(ServerController* server, QWidget* parent = nullptr);

    bool hasChanges() const;
    static constexpr int kNoticeMs = 6000; ///< how long a "reloaded" banner stays
    bool canApply() const;
    /// Every current problem as "path: message" (inline errors and the loader's).
    QStringList problems() const;
    /// Selects vhost `vhost` (and its route `route`, or the vhost itself when -1) in the tree.
    void select(int vhost, int route = -1);
    /// Adds a vhost serving `dir` (NAME.localhost) and applies it at once (drag and drop).
    bool addFolder(const QString& dir);
    /// Shows `draft` (a config file the server refused, ServerController::openDraft) in the form
    /// with `errors` on the fields they name; Apply stays off until they are fixed. The server
    /// keeps serving what it served.
    void openDraft(const config::Config& draft, const std::vector<config::ConfigError>& errors);

public slots:
    bool apply();
    void revert();
    void addVhost();
    void addRoute();
    void removeSelected();

signals:
    void notice(const QString& text);
    /// After every edit, apply and revert: whether the form now differs from what is served.
    void changesChanged(bool unapplied);

private:
    struct Field {
        QWidget* editor = nullptr;
        QLabel* error = nullptr;
    };

    QWidget* buildVhostForm();
    QWidget* buildRouteForm();
    static void alignFormLabels(QWidget* root);
    QWidget* row(const QString& key, QWidget* editor, QHash<QString, Field>& fields);
    /// "localhost › /api/hello/:name › Status" for "vhosts[0].routes[0].respond.status": the site,
    /// the route and the form's label for the key, as the user sees them; `path` itself when it is
    /// not a vhost's or route's.
    QString fieldName(const QString& path) const;
    QLineEdit* lineEdit(const QString& key, QHash<QString, Field>& fields, const QString& placeholder = {});
    QPlainTextEdit* textEdit(const QString& key, QHash<QString, Field>& fields,
                             const QString& placeholder = {});
    QCheckBox* checkBox(const QString& key, const QString& text, QHash<QString, Field>& fields);

    void rebuildTree();
    void onSelectionChanged();
    void loadForm();
    void commitForm();
    /// Checks the draft: at once on this thread everything but the disk (validate::Checks::NoFiles),
    /// then, when that finds nothing, the draft as its file will read back (reader, every check,
    /// files included) on a pool thread; filesChecked() takes the answer. Apply waits for it.
    void validate();
    /// Reads the draft back as its file would load (config::loadConfigText); callable on any thread.
    std::function<config::LoadResult()> draftReadBack() const;
    /// Takes the running check's answer now, on this thread (Apply, a dropped folder).
    void finishCheck();
    void addCoreErrors(const std::vector<config::ConfigError>& errors);
    /// The pool thread's answer for check number `generation` (older ones are dropped): the config
    /// Apply publishes, or the errors.
    void filesChecked(quint64 generation, std::shared_ptr<const config::Config> config,
                      const std::vector<config::ConfigError>& errors);
    void showErrors();
    void updateButtons();
    /// The banner above the form; `sticky` ones (errors) stay until dismissed, others hide after
    /// kNoticeMs.
    void showNotice(const QString& text, bool sticky);
    void updateCurrentItemText();
    void onServerConfigChanged();
    QString currentPrefix() const;
    QString itemText(int vhost, int route, QString* action) const;

    ServerController* m_server;
    config::Config m_draft;
    std::shared_ptr<const config::Config> m_validated; ///< the draft as loaded by the core (when valid)
    QMap<QString, QString> m_fieldErrors; ///< full path → message (values the form cannot parse)
    QMap<QString, QString> m_loadErrors;  ///< full path → message (the core's loader)
    QStringList m_otherErrors;            ///< loader errors without a path
    int m_vhost = -1;
    int m_route = -1;
    bool m_loading = false;
    std::shared_ptr<const config::Config> m_published; ///< what the server runs ("has changes": draft != it)
    quint64 m_checkGeneration = 0;                     ///< the latest check started by validate()
    bool m_checking = false;                           ///< a file check of the draft is running

    QTreeWidget* m_tree = nullptr;
    QStackedWidget* m_forms = nullptr;
    QHash<QString, Field> m_vhostFields;
    QHash<QString, Field> m_routeFields;
    QComboBox* m_kind = nullptr;
    QComboBox* m_action = nullptr;
    QStackedWidget* m_actionForms = nullptr;
    QList<QCheckBox*> m_methods;
    QComboBox* m_redirectStatus = nullptr;
    QComboBox* m_wsMode = nullptr;
    QLabel* m_notice = nullptr;
    QTimer* m_noticeTimer = nullptr;
    QLabel* m_problems = nullptr;
    QPushButton* m_apply = nullptr;
    QPushButton* m_revert = nullptr;
    QPushButton* m_addRoute = nullptr;
    QPushButton* m_remove = nullptr;
};

} // namespace portico::ui
