// A worker's life cycle at its edges (each case was a use after free, seen by the ASan run):
// - ~Worker destroys the handlers still queued on its io_context while its other members (buffer
//   pool, session list, counters, capture recorder) are alive: a connection kept alive only by
//   such a handler touches them in its destructor. io_context's own destructor freed those
//   handlers after the members declared after it were gone.
// - A listener closed twice before its posted erase runs is erased once; one closed before
//   start() gets no accept (its erase ran first and the accept's completion used the freed entry).
#include "server/snapshot.h"
#include "server/worker.h"

#include <QtTest>

#include <boost/asio/post.hpp>

#include <memory>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico;

class TestWorkerTeardown : public QObject {
    Q_OBJECT

private slots:
    void queuedHandlersDieWhileTheWorkerIsWhole() {
        server::SnapshotSlot slot; // empty: nothing here reads a snapshot
        auto worker = std::make_unique<server::Worker>(0, slot, nullptr);
        {
            io::IoBuffer warm = worker->buffers().acquire(); // the pool's free list gets storage
            worker->buffers().release(warm);
        }
        // What ~Connection does: give buffers back to the pool and count itself out.
        struct Probe {
            server::Worker* worker;
            int* destroyed;
            ~Probe() {
                io::IoBuffer b = worker->buffers().acquire();
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

    void listenerClosedTwiceBeforeStart() {
        server::SnapshotSlot slot;
        server::Worker worker(0, slot, nullptr);
        std::string error;
        const std::uint16_t port = worker.openListener("127.0.0.1", 0, error);
        QVERIFY2(port != 0, error.c_str());
        worker.closeListener("127.0.0.1", port);
        worker.closeListener("127.0.0.1", port);
        worker.start();
        worker.runSync([] {}); // the posted erase and any accept completion have run
        // Nothing listens there any more.
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        ::close(fd);
        QCOMPARE(rc, -1);
        worker.beginDrain(std::chrono::milliseconds(100));
        worker.join();
    }
};

QTEST_GUILESS_MAIN(TestWorkerTeardown)
#include "tst_worker_teardown.moc"
