package io.idmint.client;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Values of an idmint auto-increment or segment counter, handed out
 * in-process from runs fetched with {@code GET /v1/counters/NAME/ranges}:
 * one request brings {@code batch} values as a few {@code FIRST LAST}
 * runs, so taking a value costs one atomic increment. Thread-safe; share
 * one per counter. Values a process never takes are gaps, never duplicates.
 *
 * <pre>{@code
 * ValueClient orders = ValueClient.create(URI.create("http://idmint:8080/"), "orders", null, 100_000);
 * long id = orders.next();
 * }</pre>
 */
public final class ValueClient extends Prefetching<ValueClient.Run> {
    /** A run of consecutive values, {@code first .. first + size - 1}. */
    record Run(long first, long size) {}

    private final Transport transport;
    private final String path;

    private ValueClient(Transport transport, String counter, long batch, double prefetchShare) {
        super(prefetchShare, new Run(0, 0));
        if (batch < 1) {
            throw new IllegalArgumentException("batch must be at least 1, not " + batch);
        }
        this.transport = transport;
        this.path = "v1/counters/" + Transport.encode(counter) + "/ranges?count=" + batch;
    }

    /**
     * A client of {@code counter} on the server at {@code base} (e.g.
     * {@code http://idmint:8080/}), fetching {@code batch} values at a time
     * and the next batch once 80% of the last is used.
     *
     * @param token the bearer token, or {@code null} when the server needs none
     */
    public static ValueClient create(URI base, String counter, String token, long batch) {
        return new ValueClient(new Transport(base, token, Duration.ofSeconds(10)), counter, batch, 0.2);
    }

    /** The next value; waits for the network only when the buffer ran dry. */
    public long next() {
        for (;;) {
            Slot<Run> slot = current();
            long position = slot.next.getAndIncrement();
            if (position < slot.size) {
                if (position == slot.prefetchAt) {
                    prefetch();
                }
                return slot.batch.first() + position;
            }
            advance(slot);
        }
    }

    @Override
    CompletableFuture<List<Run>> fetch() {
        return transport.getText(path).thenApply(ValueClient::parse);
    }

    @Override
    long size(Run run) {
        return run.size();
    }

    /** {@code FIRST LAST} per line. */
    static List<Run> parse(String body) {
        List<Run> runs = new ArrayList<>();
        for (String line : body.split("\n")) {
            if (line.isEmpty()) {
                continue;
            }
            int space = line.indexOf(' ');
            long first = Long.parseLong(line.substring(0, space));
            long last = Long.parseLong(line.substring(space + 1));
            runs.add(new Run(first, last - first + 1));
        }
        return runs;
    }
}
