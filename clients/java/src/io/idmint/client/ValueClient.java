package io.idmint.client;

import java.net.URI;
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
 * <p>With several instances, each fetch goes to one of them and fails over
 * to the others (see {@link ClientBuilder}); the buffer keeps serving while
 * it does.
 *
 * <pre>{@code
 * ValueClient orders = ValueClient.builder()
 *         .servers("http://idmint-1:8080/", "http://idmint-2:8080/")
 *         .counter("orders")
 *         .batch(100_000)
 *         .build();
 * long id = orders.next();
 * orders.close(); // when the application stops
 * }</pre>
 */
public final class ValueClient extends Prefetching<ValueClient.Run> {
    /** A run of consecutive values, {@code first .. first + size - 1}. */
    record Run(long first, long size) {}

    /** The settings of a {@link ValueClient}; see {@link ClientBuilder}. */
    public static final class Builder extends ClientBuilder<Builder, ValueClient> {
        Builder() {
            super(10_000);
        }

        @Override
        public ValueClient build() {
            return new ValueClient(settings());
        }
    }

    private final String path;

    private ValueClient(ClientBuilder.Settings settings) {
        super(settings, new Run(0, 0));
        this.path = "v1/counters/" + encode(settings.counter()) + "/ranges?count=" + settings.batch();
    }

    /**
     * A builder: {@code servers(...)} and {@code counter(...)} are required.
     *
     * @return a builder with the defaults {@link ClientBuilder} states
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A client of {@code counter} on the one server at {@code base} (e.g.
     * {@code http://idmint:8080/}), fetching {@code batch} values at a time
     * and the next batch once 80% of the last is used; the other settings
     * are {@link ClientBuilder}'s defaults.
     *
     * @param base the server's base URL
     * @param counter the counter's name
     * @param token the bearer token, or {@code null} when the server needs none
     * @param batch values per request, at least 1
     * @return the client
     */
    public static ValueClient create(URI base, String counter, String token, long batch) {
        return builder().servers(base).counter(counter).token(token).batch(batch).build();
    }

    /**
     * The next value; waits for the network only when the buffer ran dry.
     *
     * @return a value no other caller of any client of this counter gets
     * @throws IdmintException when the fetch this call waited for failed
     * @throws IllegalStateException once the client is closed
     */
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
        return servers().get(path).thenApply(this::parse);
    }

    @Override
    long size(Run run) {
        return run.size();
    }

    /** {@code FIRST LAST} per line; anything else is the server's mistake, named. */
    List<Run> parse(String body) {
        List<Run> runs = new ArrayList<>();
        for (String line : body.split("\n")) {
            if (line.isEmpty()) {
                continue;
            }
            int space = line.indexOf(' ');
            try {
                long first = Long.parseLong(line.substring(0, space));
                long last = Long.parseLong(line.substring(space + 1));
                if (last < first) {
                    throw new NumberFormatException("the run ends before it starts");
                }
                runs.add(new Run(first, last - first + 1));
            } catch (RuntimeException error) {
                throw new IdmintException(200, "not a run of values of " + what + ": '" + line + "' (" + error.getMessage() + ")", error);
            }
        }
        if (runs.isEmpty()) {
            throw new IdmintException(200, "an answer with no values of " + what, null);
        }
        return runs;
    }

    static String encode(String text) {
        return java.net.URLEncoder.encode(text, java.nio.charset.StandardCharsets.UTF_8);
    }
}
