package io.idmint.client;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The in-process buffer both clients share (Tinyid's client shape): takers
 * claim positions in the current batch with one atomic increment and no
 * lock; the taker that claims the batch's prefetch position starts the next
 * fetch in the background, so that a steady stream of takers never waits
 * on the network; only the taker that finds everything used up takes the
 * lock, to install the next batch (waiting for its fetch if it is still in
 * flight).
 *
 * @param <B> what one fetch returns a list of: a run of values, or IDs
 */
abstract class Prefetching<B> {
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

    private final double prefetchShare;
    private volatile Slot<B> current;
    private final ArrayDeque<B> queued = new ArrayDeque<>();
    private CompletableFuture<List<B>> pending;

    /**
     * @param prefetchShare how much of the last buffered batch is left when
     *     the next fetch starts (0.2: at 80% used)
     */
    Prefetching(double prefetchShare, B empty) {
        if (!(prefetchShare > 0 && prefetchShare <= 1)) {
            throw new IllegalArgumentException("prefetch share must be in (0, 1], not " + prefetchShare);
        }
        this.prefetchShare = prefetchShare;
        this.current = new Slot<>(empty, 0, -1);
    }

    /** Fetches the next batches from the server. */
    abstract CompletableFuture<List<B>> fetch();

    /** How many positions a batch holds. */
    abstract long size(B batch);

    final Slot<B> current() {
        return current;
    }

    /** Called by the taker of a slot's prefetch position. */
    final synchronized void prefetch() {
        if (pending == null && queued.isEmpty()) {
            pending = fetch();
        }
    }

    /** Installs the next batch once {@code exhausted} is used up. */
    final synchronized void advance(Slot<B> exhausted) {
        if (current != exhausted) {
            return; // another taker installed the next batch already
        }
        if (queued.isEmpty()) {
            CompletableFuture<List<B>> fetched = pending != null ? pending : fetch();
            pending = null;
            queued.addAll(Transport.await(fetched));
        }
        B batch = queued.poll();
        long size = size(batch);
        long prefetchAt = queued.isEmpty() ? (long) Math.floor(size * (1 - prefetchShare)) : -1;
        current = new Slot<>(batch, size, Math.min(prefetchAt, size - 1));
    }
}
