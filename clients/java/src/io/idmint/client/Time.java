package io.idmint.client;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The clock that set-asides, backoffs and fetch deadlines are measured on,
 * and the timer that runs a retry after its backoff. The real one is
 * {@link System#nanoTime()} and a shared daemon timer; the client's own
 * tests put in one whose time moves only when a backoff asks it to, so that
 * the failover rules can be checked step by step without sleeping. HTTP
 * request timeouts always run on real time.
 */
interface Time {
    /** Now, in nanoseconds from an arbitrary origin (as {@link System#nanoTime()}). */
    long nanos();

    /** Runs {@code task} once {@code nanos} have passed, on another thread. */
    void after(long nanos, Runnable task);

    /** {@link System#nanoTime()} and {@link CompletableFuture#delayedExecutor}. */
    Time REAL = new Time() {
        @Override
        public long nanos() {
            return System.nanoTime();
        }

        @Override
        public void after(long nanos, Runnable task) {
            CompletableFuture.delayedExecutor(Math.max(0, nanos), TimeUnit.NANOSECONDS).execute(task);
        }
    };
}
