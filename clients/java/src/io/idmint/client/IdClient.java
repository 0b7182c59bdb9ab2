package io.idmint.client;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Formatted IDs of an idmint counter of any kind, fetched {@code batch} at
 * a time (at most the server's {@code --max-count}) with
 * {@code GET /v1/counters/NAME/ids} through the server's policy, and handed
 * out in-process, the next batch fetched in the background once 80% of
 * the current one is used. Thread-safe; share one per counter.
 */
public final class IdClient extends Prefetching<String[]> {
    private final Transport transport;
    private final String path;

    private IdClient(Transport transport, String counter, String prefix, int batch, double prefetchShare) {
        super(prefetchShare, new String[0]);
        if (batch < 1) {
            throw new IllegalArgumentException("batch must be at least 1, not " + batch);
        }
        this.transport = transport;
        this.path = "v1/counters/" + Transport.encode(counter) + "/ids?count=" + batch
                + (prefix == null ? "" : "&prefix=" + Transport.encode(prefix));
    }

    /**
     * A client of {@code counter} on the server at {@code base}.
     *
     * @param prefix the prefix instead of the counter's own, or {@code null}
     * @param token the bearer token, or {@code null} when the server needs none
     */
    public static IdClient create(URI base, String counter, String prefix, String token, int batch) {
        return new IdClient(new Transport(base, token, Duration.ofSeconds(10)), counter, prefix, batch, 0.2);
    }

    /** The next ID; waits for the network only when the buffer ran dry. */
    public String next() {
        for (;;) {
            Slot<String[]> slot = current();
            long position = slot.next.getAndIncrement();
            if (position < slot.size) {
                if (position == slot.prefetchAt) {
                    prefetch();
                }
                return slot.batch[(int) position];
            }
            advance(slot);
        }
    }

    @Override
    CompletableFuture<List<String[]>> fetch() {
        return transport.getText(path).thenApply(body -> java.util.Collections.singletonList(body.split("\n")));
    }

    @Override
    long size(String[] ids) {
        return ids.length;
    }
}
