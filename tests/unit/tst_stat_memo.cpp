// WorkerState::statFile: one stat(2) per file per turn, fresh after newTurn(), never memoised
// outside a turn (handlers called directly see every edit).
#include <portico/handlers/dispatch.h>

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using portico::handlers::WorkerState;

class TestStatMemo : public QObject {
    Q_OBJECT
    static void writeBytes(const QString& path, int n) {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray(n, 'x'));
    }
    static long long sizeVia(WorkerState& ws, const QByteArray& path, int* rc = nullptr) {
        struct ::stat st {};
        int r = ws.statFile(path.constData(), static_cast<std::size_t>(path.size()), st);
        if (rc) *rc = r;
        return r == 0 ? static_cast<long long>(st.st_size) : -1;
    }

private slots:
    void outsideATurnEveryCallStats() {
        QTemporaryDir dir;
        const QByteArray p = dir.filePath("a.txt").toUtf8();
        writeBytes(p, 5);
        WorkerState ws;
        QCOMPARE(sizeVia(ws, p), 5);
        writeBytes(p, 9);
        QCOMPARE(sizeVia(ws, p), 9);
    }

    void oneStatPerTurn() {
        QTemporaryDir dir;
        const QByteArray p = dir.filePath("a.txt").toUtf8();
        writeBytes(p, 5);
        WorkerState ws;
        ws.newTurn();
        QCOMPARE(sizeVia(ws, p), 5);
        writeBytes(p, 9);
        QCOMPARE(sizeVia(ws, p), 5); // same batch: the remembered result
        ws.newTurn();
        QCOMPARE(sizeVia(ws, p), 9); // read after the edit: sees it
    }

    void missingFilesAndCollisions() {
        QTemporaryDir dir;
        WorkerState ws;
        ws.newTurn();
        const QByteArray missing = dir.filePath("nope").toUtf8();
        int rc = 0;
        QCOMPARE(sizeVia(ws, missing, &rc), -1);
        QCOMPARE(rc, -1);
        QCOMPARE(errno, ENOENT);
        writeBytes(missing, 3);
        QCOMPARE(sizeVia(ws, missing, &rc), -1); // remembered for this turn, errno kept
        QCOMPARE(errno, ENOENT);
        ws.newTurn();
        QCOMPARE(sizeVia(ws, missing), 3);
        // Many names in one turn (more than the memo's slots): each gets its own answer.
        for (int i = 0; i < 200; ++i)
            writeBytes(dir.filePath(QString("f%1").arg(i)), i);
        ws.newTurn();
        for (int round = 0; round < 2; ++round)
            for (int i = 0; i < 200; ++i)
                QCOMPARE(sizeVia(ws, dir.filePath(QString("f%1").arg(i)).toUtf8()), i);
    }
};

QTEST_APPLESS_MAIN(TestStatMemo)
#include "tst_stat_memo.moc"
