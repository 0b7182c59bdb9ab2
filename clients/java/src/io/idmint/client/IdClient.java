package io.idmint.client;

import java.net.URI;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/**
 * Formatted IDs of an idmint counter of any kind, fetched {@code batch} at
 * a time (at most the server's {@code --max-count}) with
 * {@code GET /v1/counters/NAME/ids} through the server's policy, and handed
 * out in-process, the next batch fetched in the background once 80% of
 * the current one is used. Thread-safe; share one per counter. With several
 * instances, each fetch fails over as {@link ClientBuilder} describes.
 */
public final class IdClient extends Prefetching<String[]> {
    /** The settings of an {@link IdClient}; see {@link ClientBuilder}. */
    public static final class Builder extends ClientBuilder<Builder, IdClient> {
        private String prefix;

        Builder() {
            super(100);
        }

        /**
         * The prefix instead of the counter's own; default: the counter's.
         *
         * @param prefix the prefix, or {@code null} for the counter's own
         * @return this builder
         */
        public Builder prefix(String prefix) {
            this.prefix = prefix;
            return this;
        }

        @Override
        public IdClient build() {
            ClientBuilder.Settings settings = settings();
            if (settings.batch() > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("batch must be at most " + Integer.MAX_VALUE + " IDs, not " + settings.batch());
            }
            return new IdClient(settings, prefix);
        }
    }

    private final String path;

    private IdClient(ClientBuilder.Settings settings, String prefix) {
        super(settings, new String[0]);
        this.path = "v1/counters/" + ValueClient.encode(settings.counter()) + "/ids?count=" + settings.batch()
                + (prefix == null ? "" : "&prefix=" + ValueClient.encode(prefix));
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
     * A client of {@code counter} on the one server at {@code base}; the
     * other settings are {@link ClientBuilder}'s defaults.
     *
     * @param base the server's base URL
     * @param counter the counter's name
     * @param prefix the prefix instead of the counter's own, or {@code null}
     * @param token the bearer token, or {@code null} when the server needs none
     * @param batch IDs per request, at least 1
     * @return the client
     */
    public static IdClient create(URI base, String counter, String prefix, String token, int batch) {
        return builder().servers(base).counter(counter).prefix(prefix).token(token).batch(batch).build();
    }

    /**
     * The next ID; waits for the network only when the buffer ran dry.
     *
     * @return an ID no other caller of any client of this counter gets
     * @throws IdmintException when the fetch this call waited for failed
     * @throws IllegalStateException once the client is closed
     */
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

    /**
     * The next ID as a {@link UUID}, for a counter whose IDs are UUIDs (a
     * snowflake counter served with {@code builtin:uuidv7}, see
     * docs/policies.md): {@link #next()}, parsed.
     *
     * @return a UUID no other caller of any client of this counter gets
     * @throws IdmintException when the fetch this call waited for failed, or
     *     the ID is not a UUID's canonical text (the counter's policy writes
     *     something else); the ID is used up either way
     * @throws IllegalStateException once the client is closed
     */
    public UUID nextUuid() {
        String id = next();
        if (!CANONICAL_UUID.matcher(id).matches()) {
            throw new IdmintException(200, "the ID " + id + " of " + what + " is not a UUID", null);
        }
        return UUID.fromString(id);
    }

    /** A UUID's canonical text: 8-4-4-4-12 hexadecimal digits. */
    private static final Pattern CANONICAL_UUID =
            Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    @Override
    CompletableFuture<List<String[]>> fetch() {
        return servers().get(path).thenApply(body -> {
            String[] ids = body.lines().filter(line -> !line.isEmpty()).toArray(String[]::new);
            if (ids.length == 0) {
                throw new IdmintException(200, "an answer with no IDs of " + what, null);
            }
            return Collections.singletonList(ids);
        });
    }

    @Override
    long size(String[] ids) {
        return ids.length;
    }
}
