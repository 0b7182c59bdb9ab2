package io.idmint.client;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

/**
 * The settings {@link ValueClient} and {@link IdClient} share: which
 * {@code idmint serve} instances to ask, for which counter, how many values
 * per request, and how long to wait for whom. Get one with
 * {@link ValueClient#builder()} or {@link IdClient#builder()}; every setter
 * returns the builder, and {@code build()} checks the whole set, refusing a
 * bad one with an {@link IllegalArgumentException} that names the setting.
 *
 * <p>Failover: each fetch asks one instance chosen at random among those
 * not set aside. An instance that gives no answer, or answers with a 5xx
 * status, 408 or 429, is set aside for {@link #setAside setAside}'s first
 * duration, doubled at each further failure in a row up to its cap, and is
 * asked again once that time is over; its first answer ends the set-aside.
 * When every instance has failed in a round (or is set aside), the fetch
 * waits a jittered backoff and goes round again, until its
 * {@link #deadline deadline}; only then does a caller see an
 * {@link IdmintException}, which names each instance and why it failed. Any
 * other answer (400, 401, 403, 404, 409, ...) is the same from every
 * instance, since they share one database: it goes to the caller at once.
 *
 * @param <S> the builder's own type, so that setters chain
 * @param <C> the client it builds
 */
public abstract class ClientBuilder<S extends ClientBuilder<S, C>, C> {
    private final List<String> servers = new ArrayList<>();
    private String counter;
    private String token;
    private long batch;
    private double prefetchShare = 0.2;
    private Duration connectTimeout = Duration.ofSeconds(2);
    private Duration requestTimeout = Duration.ofSeconds(5);
    private Duration deadline = Duration.ofSeconds(10);
    private Duration setAsideFirst = Duration.ofSeconds(1);
    private Duration setAsideMax = Duration.ofSeconds(30);
    private Duration backoffFirst = Duration.ofMillis(50);
    private Duration backoffMax = Duration.ofSeconds(1);
    private Time time = Time.REAL;

    ClientBuilder(long defaultBatch) {
        this.batch = defaultBatch;
    }

    @SuppressWarnings("unchecked")
    private S self() {
        return (S) this;
    }

    /**
     * The base URLs of the {@code idmint serve} instances, e.g.
     * {@code http://idmint-1:8080/}; replaces any given before. Credentials in
     * a URL ({@code user:password@}) are not sent (use {@link #token}) and
     * never appear in errors.
     *
     * @param urls one or more {@code http://} or {@code https://} URLs
     * @return this builder
     */
    public S servers(String... urls) {
        servers.clear();
        servers.addAll(Arrays.asList(urls));
        return self();
    }

    /**
     * As {@link #servers(String...)}, from URIs.
     *
     * @param urls one or more {@code http://} or {@code https://} URIs
     * @return this builder
     */
    public S servers(URI... urls) {
        return servers(Arrays.asList(urls));
    }

    /**
     * As {@link #servers(String...)}, from a collection of URIs.
     *
     * @param urls one or more {@code http://} or {@code https://} URIs
     * @return this builder
     */
    public S servers(Collection<URI> urls) {
        servers.clear();
        for (URI url : urls) {
            servers.add(url == null ? null : url.toString());
        }
        return self();
    }

    /**
     * The counter's name (required).
     *
     * @param name the name the counter was created with
     * @return this builder
     */
    public S counter(String name) {
        this.counter = name;
        return self();
    }

    /**
     * The bearer token the instances require ({@code --tokens} or
     * {@code --tokens-from-db}); none by default.
     *
     * @param token the token, or {@code null} for none
     * @return this builder
     */
    public S token(String token) {
        this.token = token;
        return self();
    }

    /**
     * How many values or IDs one request fetches (at most what the server
     * allows: 1,000,000 values per {@code ranges} request, {@code --max-count}
     * IDs). Default: 10,000 values for a {@link ValueClient}, 100 IDs for an
     * {@link IdClient}.
     *
     * @param count at least 1
     * @return this builder
     */
    public S batch(long count) {
        this.batch = count;
        return self();
    }

    /**
     * How much of the buffer is left when the next fetch starts in the
     * background; default 0.2 (the next fetch starts once 80% of the last
     * one is used).
     *
     * @param share more than 0, at most 1
     * @return this builder
     */
    public S prefetchShare(double share) {
        this.prefetchShare = share;
        return self();
    }

    /**
     * How long to wait for a connection to an instance; default 2 s.
     *
     * @param timeout positive
     * @return this builder
     */
    public S connectTimeout(Duration timeout) {
        this.connectTimeout = timeout;
        return self();
    }

    /**
     * How long one request to one instance may take, answer included,
     * before that instance counts as failed; default 5 s.
     *
     * @param timeout positive
     * @return this builder
     */
    public S requestTimeout(Duration timeout) {
        this.requestTimeout = timeout;
        return self();
    }

    /**
     * How long one fetch may go on failing over before its callers get an
     * error; default 10 s. A caller that needs values waits at most this
     * long, plus at most {@link #requestTimeout requestTimeout} for the
     * request in progress when the deadline passes.
     *
     * @param deadline positive
     * @return this builder
     */
    public S deadline(Duration deadline) {
        this.deadline = deadline;
        return self();
    }

    /**
     * How long a failed instance is left out of the choice: {@code first}
     * after one failure, doubled at each further failure in a row, at most
     * {@code max}; default 1 s up to 30 s.
     *
     * @param first positive
     * @param max at least {@code first}
     * @return this builder
     */
    public S setAside(Duration first, Duration max) {
        this.setAsideFirst = first;
        this.setAsideMax = max;
        return self();
    }

    /**
     * How long a fetch waits before going round the instances again once
     * each has failed: a random time between half and all of {@code first},
     * doubled at each round, at most {@code max}; default 50 ms up to 1 s.
     *
     * @param first positive
     * @param max at least {@code first}
     * @return this builder
     */
    public S backoff(Duration first, Duration max) {
        this.backoffFirst = first;
        this.backoffMax = max;
        return self();
    }

    /** The clock and timer (the client's own tests put in one of their own). */
    S time(Time time) {
        this.time = time;
        return self();
    }

    /**
     * The client, with these settings.
     *
     * @return a new client, to be shared by every thread that needs this counter
     * @throws IllegalArgumentException when a setting is missing or out of range, naming it
     */
    public abstract C build();

    /** The settings, checked. */
    final Settings settings() {
        if (servers.isEmpty()) {
            throw new IllegalArgumentException("no server URL given: servers(\"http://idmint:8080/\", ...) needs at least one");
        }
        List<Instance> instances = new ArrayList<>();
        for (String url : servers) {
            Instance instance = Instance.parse(url);
            for (Instance other : instances) {
                if (other.base.equals(instance.base)) {
                    throw new IllegalArgumentException("server URL " + instance.shown + " is listed twice");
                }
            }
            instances.add(instance);
        }
        if (counter == null || counter.isEmpty()) {
            throw new IllegalArgumentException("no counter given: counter(\"NAME\") is required");
        }
        if (token != null && (token.isEmpty() || token.chars().anyMatch(c -> c < 0x21 || c > 0x7e))) {
            throw new IllegalArgumentException("the token must be printable ASCII without spaces (null for none)");
        }
        if (batch < 1) {
            throw new IllegalArgumentException("batch must be at least 1, not " + batch);
        }
        if (!(prefetchShare > 0 && prefetchShare <= 1)) {
            throw new IllegalArgumentException("prefetchShare must be more than 0 and at most 1, not " + prefetchShare);
        }
        positive("connectTimeout", connectTimeout);
        positive("requestTimeout", requestTimeout);
        positive("deadline", deadline);
        range("setAside", setAsideFirst, setAsideMax);
        range("backoff", backoffFirst, backoffMax);
        if (time == null) {
            throw new IllegalArgumentException("no time source given");
        }
        return new Settings(List.copyOf(instances), counter, token, batch, prefetchShare, connectTimeout,
                requestTimeout.toNanos(), deadline.toNanos(), setAsideFirst.toNanos(), setAsideMax.toNanos(),
                backoffFirst.toNanos(), backoffMax.toNanos(), time);
    }

    private static void positive(String name, Duration duration) {
        if (duration == null || duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " must be a positive duration, not " + duration);
        }
    }

    private static void range(String name, Duration first, Duration max) {
        positive(name + " first", first);
        positive(name + " max", max);
        if (max.compareTo(first) < 0) {
            throw new IllegalArgumentException(name + " max (" + max + ") must be at least its first (" + first + ")");
        }
    }

    /** What {@link #build()} hands to the client, checked; durations in nanoseconds. */
    record Settings(List<Instance> instances, String counter, String token, long batch, double prefetchShare,
            Duration connectTimeout, long requestTimeout, long deadline, long setAsideFirst, long setAsideMax,
            long backoffFirst, long backoffMax, Time time) {}
}
