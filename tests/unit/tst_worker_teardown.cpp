// ~Worker destroys the handlers still queued on its io_context while its other members (buffer
// pool, session list, counters, capture recorder) are alive: a connection kept alive only by such
// a handler touches them in its destructor. Before, io_context's destructor freed those handlers
// after the members declared after it were gone (a use after free, seen by the ASan run).
#include "net/snapshot.h"
#include "net/worker.h"

#include <QtTest>

#include <boost/asio/post.hpp>

#include <memory>

using namespace portico;

class TestWorkerTeardown : public QObject {
    Q_OBJECT

private slots:
    void queuedHandlersDieWhileTheWorkerIsWhole() {
        net::SnapshotSlot slot; // empty: nothing here reads a snapshot
        auto worker = std::make_unique<net::Worker>(0, slot, nullptr);
        {
            net::IoBuffer warm = worker->buffers().acquire(); // the pool's free list gets storage
            worker->buffers().release(warm);
        }
        // What ~Connection does: give buffers back to the pool and count itself out.
        struct Probe {
            net::Worker* worker;
            int* destroyed;
            ~Probe() {
                net::IoBuffer b = worker->buffers().acquire();
                worker->buffers().release(b);
                worker->counters().open.fetch_sub(1, std::memory_order_relaxed);
                ++*destroyed;
            }
        };
        int destroyed = 0;
        std::shared_ptr<Probe> probe(new Probe{worker.get(), &destroyed});
        worker->counters().open.fetch_add(1, std::memory_order_relaxed);
        // Never runs: the worker was never started.
        boost::asio::post(worker->io(), [probe] { QFAIL("a handler ran on a worker that never started"); });
        probe.reset();
        QCOMPARE(destroyed, 0); // the queued handler holds it
        worker.reset();
        QCOMPARE(destroyed, 1);
    }
};

QTEST_GUILESS_MAIN(TestWorkerTeardown)
#include "tst_worker_teardown.moc"
