package io.idmint.client;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The in-process buffer both clients share (Tinyid's client shape): takers
 * claim positions in the current batch with one atomic increment and no
 * lock. The taker that claims the prefetch position (where the share of
 * values left falls to {@code prefetchShare} of a fetch) starts the next
 * fetch in the background, so that a steady stream of takers never waits on
 * the network.
 *
 * <p>At most one fetch is in flight per client. A taker that finds the
 * buffer used up waits for that fetch (starting it if there is none), for a
 * bounded time and without holding the lock: the lock guards only the
 * bookkeeping (which batch is current, what is queued, which fetch is in
 * flight). A fetch that fails hands its error to the takers waiting on it
 * and to no one else; a background fetch that failed leaves nothing behind,
 * and the next taker that needs values starts a new one.
 *
 * @param <B> what one fetch returns a list of: a run of values, or IDs
 */
abstract class Prefetching<B> implements AutoCloseable {
    /** A batch being handed out: positions {@code 0 .. size-1}. */
    static final class Slot<B> {
        final B batch;
        final long size;
        final AtomicLong next = new AtomicLong();
        /** The position whose taker starts the next fetch; -1 for none. */
        final long prefetchAt;

        Slot(B batch, long size, long prefetchAt) {
            this.batch = batch;
            this.size = size;
            this.prefetchAt = prefetchAt;
        }
    }

    /** What the client's own tests watch; the default does nothing. */
    interface Hooks {
        /** A taker is about to wait for the fetch in flight (the lock is not held). */
        default void waiting() {}

        /** A fetch ended: {@code error} is null when it brought values. */
        default void landed(Throwable error) {}
    }

    private final Object lock = new Object();
    private final double prefetchShare;
    private final Slot<B> empty;
    /** How long a taker waits for a fetch, in ns: the fetch's deadline and one request past it. */
    private final long waitLimit;
    private final Servers servers;
    /** "counter 'orders'", for errors. */
    final String what;
    volatile Hooks hooks = new Hooks() {};

    private volatile Slot<B> current;
    private volatile boolean closed;
    // Guarded by lock.
    private final ArrayDeque<B> queued = new ArrayDeque<>();
    private long queuedValues;
    private long lastFetched;
    private CompletableFuture<List<B>> inFlight;
    /** Which fetch {@link #inFlight} is, set before it exists (it may land at once). */
    private Object inFlightId;

    Prefetching(ClientBuilder.Settings settings, B empty) {
        this.prefetchShare = settings.prefetchShare();
        this.empty = new Slot<>(empty, 0, -1);
        this.current = this.empty;
        this.what = "counter '" + settings.counter() + "'";
        this.waitLimit = settings.deadline() + settings.requestTimeout() + TimeUnit.SECONDS.toNanos(1);
        this.servers = new Servers(settings, what);
    }

    /** Fetches the next batches (from {@link #servers()}). */
    abstract CompletableFuture<List<B>> fetch();

    /** How many positions a batch holds. */
    abstract long size(B batch);

    final Servers servers() {
        return servers;
    }

    /** The batch being handed out; throws once the client is closed. */
    final Slot<B> current() {
        if (closed) {
            throw servers.closedError();
        }
        return current;
    }

    /** Called by the taker of a slot's prefetch position. */
    final void prefetch() {
        synchronized (lock) {
            if (!closed && inFlight == null) {
                start();
            }
        }
    }

    /**
     * Installs the next batch once {@code exhausted} is used up, waiting for
     * the fetch in flight (started if there is none) outside the lock.
     */
    final void advance(Slot<B> exhausted) {
        for (;;) {
            CompletableFuture<List<B>> awaited;
            synchronized (lock) {
                if (closed) {
                    throw servers.closedError();
                }
                if (current != exhausted) {
                    return; // another taker installed the next batch already
                }
                if (!queued.isEmpty()) {
                    install();
                    return;
                }
                awaited = inFlight != null ? inFlight : start();
            }
            hooks.waiting();
            await(awaited);
        }
    }

    /**
     * Starts the one fetch; the lock is held. Takers wait on the future that
     * completes once {@link #landed} has queued the values, so that a woken
     * taker finds them there.
     */
    private CompletableFuture<List<B>> start() {
        CompletableFuture<List<B>> fetched;
        try {
            fetched = fetch();
        } catch (RuntimeException error) {
            fetched = CompletableFuture.failedFuture(error);
        }
        Object fetch = new Object();
        inFlightId = fetch;
        // Runs at once, in this thread, if the fetch has ended already: the lock is reentrant.
        CompletableFuture<List<B>> started = fetched.whenComplete((batches, error) -> landed(fetch, batches, error));
        if (inFlightId == fetch) {
            inFlight = started;
        }
        return started;
    }

    private void landed(Object fetch, List<B> batches, Throwable error) {
        synchronized (lock) {
            if (inFlightId == fetch) {
                inFlight = null;
                inFlightId = null;
            }
            // A failure is not kept: it reaches the takers waiting on this fetch only.
            if (error == null && !closed) {
                long total = 0;
                for (B batch : batches) {
                    long size = size(batch);
                    if (size > 0) {
                        queued.add(batch);
                        total += size;
                    }
                }
                queuedValues += total;
                lastFetched = total;
            }
        }
        hooks.landed(error);
    }

    /** Makes the next queued batch current; the lock is held. */
    private void install() {
        B batch = queued.poll();
        long size = size(batch);
        queuedValues -= size;
        // The position after whose taking prefetchShare of the last fetch is left, counting what is queued.
        long threshold = (long) Math.ceil(prefetchShare * lastFetched);
        long prefetchAt = Math.max(0, size + queuedValues - threshold);
        current = new Slot<>(batch, size, prefetchAt < size ? prefetchAt : -1);
    }

    /** Waits for {@code fetch}, bounded; its failure is this caller's. */
    private void await(CompletableFuture<List<B>> fetch) {
        try {
            fetch.get(waitLimit, TimeUnit.NANOSECONDS);
        } catch (ExecutionException failed) {
            throw rethrown(failed.getCause());
        } catch (CancellationException cancelled) {
            throw rethrown(servers.closedError());
        } catch (TimeoutException timeout) {
            throw new IdmintException("no values of " + what + " within " + Servers.show(waitLimit)
                    + "; the fetch goes on, and the next caller waits for it", null);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new IdmintException("interrupted while waiting for values of " + what, interrupted);
        }
    }

    /** The fetch's failure, as an exception of this caller's thread. */
    private static RuntimeException rethrown(Throwable cause) {
        if (cause instanceof IdmintException shared) {
            return new IdmintException(shared);
        }
        if (cause instanceof IllegalStateException closed) {
            return new IllegalStateException(closed.getMessage(), closed);
        }
        return new IdmintException("fetching values failed: " + cause, cause);
    }

    /**
     * Stops the client: the fetch in flight is abandoned (its waiting callers
     * get an {@link IllegalStateException}), no new one starts, and every
     * later call throws {@link IllegalStateException}. Values fetched and not
     * taken are gaps. Calling it again does nothing.
     */
    @Override
    public void close() {
        CompletableFuture<List<B>> abandoned;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            abandoned = inFlight;
            inFlight = null;
            inFlightId = null;
            queued.clear();
            queuedValues = 0;
            current = empty;
        }
        servers.close();
        if (abandoned != null) {
            abandoned.completeExceptionally(servers.closedError());
        }
    }
}
