package io.idmint.client;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock that moves only when told to or when a backoff waits: a wait
 * moves it by the wait's length and runs the task at once, so set-asides
 * and deadlines can be checked step by step and no check sleeps.
 */
final class FakeTime implements Time {
    private final AtomicLong now = new AtomicLong(1_000_000_000_000L);
    private final ExecutorService runner = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "fake-time");
        thread.setDaemon(true);
        return thread;
    });

    @Override
    public long nanos() {
        return now.get();
    }

    @Override
    public void after(long nanos, Runnable task) {
        now.addAndGet(nanos);
        runner.execute(task);
    }

    void advance(Duration duration) {
        now.addAndGet(duration.toNanos());
    }
}
