package io.idmint.client;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Requests to several {@code idmint serve} instances with failover (GETs,
 * and POSTs whose retries are safe: a series' reserve with its client key,
 * a confirm, a void):
 * each fetch asks one instance chosen at random among those not set aside;
 * a failed one (no answer, or 5xx/408/429) is set aside for
 * {@code setAsideFirst}, doubled at each failure in a row up to
 * {@code setAsideMax}, and the fetch goes on with another. An answer every
 * instance would give (a 4xx other than 408 and 429, a 500 {@code policy})
 * ends the fetch at once ({@link #isInstanceFailure}). Once every
 * instance failed in a round (or all are set aside), the fetch waits a
 * jittered backoff and goes round again, until its deadline (no request
 * starts after it; one in progress has its full timeout); then it fails
 * with an {@link IdmintException} naming each instance and why. When every
 * instance is set aside at the start of a round, the one whose set-aside
 * ends first is asked anyway: waiting for it would only make the caller
 * wait longer.
 *
 * <p>Health is kept under this object's lock, held only for bookkeeping,
 * never across a request.
 */
final class Servers {
    private final List<Instance> instances;
    private final ClientBuilder.Settings settings;
    private final Time time;
    private final HttpClient http;
    /** "counter 'orders'": how errors name what was asked for. */
    private final String what;
    private final Set<Attempt> active = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    Servers(ClientBuilder.Settings settings, String what) {
        this.instances = settings.instances();
        this.settings = settings;
        this.time = settings.time();
        this.what = what;
        this.http = HttpClient.newBuilder()
                // idmint serve speaks HTTP/1.1 on plain http: no h2c upgrade dance.
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(settings.connectTimeout())
                .build();
    }

    /** The body of {@code GET path} from some instance, as text. */
    CompletableFuture<String> get(String path) {
        return start(path, null);
    }

    /**
     * The JSON answer of {@code POST path} with JSON {@code body} from some
     * instance (a 2xx); asked again of another instance after an instance's
     * failure, so only for requests whose retry is safe.
     */
    CompletableFuture<String> post(String path, String body) {
        return start(path, body);
    }

    private CompletableFuture<String> start(String path, String body) {
        Attempt attempt = new Attempt(path, body, time.nanos() + settings.deadline());
        active.add(attempt);
        attempt.step();
        return attempt.result;
    }

    /** Stops every fetch in progress (their callers see {@link #closedError()}) and any later one. */
    void close() {
        closed = true;
        for (Attempt attempt : active) {
            attempt.stop();
        }
    }

    IllegalStateException closedError() {
        return new IllegalStateException("the idmint client of " + what + " is closed");
    }

    /** One fetch: its rounds over the instances, until an answer or the deadline. */
    private final class Attempt {
        final String path;
        /** A POST's JSON body; null for a GET. */
        final String body;
        final long deadlineAt;
        final CompletableFuture<String> result = new CompletableFuture<>();
        /** Instances asked in this round. Touched by one step at a time. */
        final Set<Instance> tried = new HashSet<>();
        /** Why each instance failed in this fetch, in the order they failed. */
        final Map<Instance, String> why = new LinkedHashMap<>();
        Throwable lastCause;
        int round;
        volatile CompletableFuture<HttpResponse<String>> sending;

        Attempt(String path, String body, long deadlineAt) {
            this.path = path;
            this.body = body;
            this.deadlineAt = deadlineAt;
            result.whenComplete((answer, error) -> active.remove(this));
        }

        void stop() {
            result.completeExceptionally(closedError());
            CompletableFuture<HttpResponse<String>> request = sending;
            if (request != null) {
                request.cancel(true); // aborts the exchange (JDK 16+)
            }
        }

        void step() {
            if (result.isDone()) {
                return;
            }
            if (closed) {
                stop();
                return;
            }
            long now = time.nanos();
            long remaining = deadlineAt - now;
            if (remaining <= 0) {
                giveUp();
                return;
            }
            Instance instance = pick(now, tried);
            if (instance == null) {
                round++;
                tried.clear();
                time.after(Math.min(backoff(round), remaining), this::step);
                return;
            }
            tried.add(instance);
            // A full request timeout even near the deadline: a request cut to the
            // last few milliseconds would only fail, and hide why the instance failed.
            send(instance, settings.requestTimeout());
        }

        private void send(Instance instance, long timeout) {
            HttpRequest.Builder request = HttpRequest.newBuilder(instance.base.resolve(path))
                    .timeout(Duration.ofNanos(timeout));
            if (body == null) {
                request.header("Accept", "text/plain").GET();
            } else {
                request.header("Accept", "application/json")
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body));
            }
            if (settings.token() != null) {
                request.header("Authorization", "Bearer " + settings.token());
            }
            CompletableFuture<HttpResponse<String>> sent;
            try {
                sent = http.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString());
            } catch (RuntimeException error) {
                sent = CompletableFuture.failedFuture(error);
            }
            sending = sent;
            // The request timeout covers the answer's head only: bound the body too.
            CompletableFuture<HttpResponse<String>> exchange = sent;
            sent.copy().orTimeout(timeout, TimeUnit.NANOSECONDS).whenComplete((response, error) -> {
                sending = null;
                if (error != null) {
                    Throwable cause = error instanceof CompletionException && error.getCause() != null
                            ? error.getCause() : error;
                    if (cause instanceof TimeoutException || cause instanceof HttpTimeoutException) {
                        exchange.cancel(true);
                        failed(instance, "no answer within " + show(timeout), cause);
                    } else {
                        failed(instance, describe(cause), cause);
                    }
                    step();
                    return;
                }
                int status = response.statusCode();
                if (status == 200 || (body != null && status / 100 == 2)) {
                    answered(instance);
                    result.complete(response.body());
                } else if (isInstanceFailure(status, response.body())) {
                    failed(instance, "answered " + status + ": " + shorten(response.body()),
                            new IdmintException(status, response.body(), null));
                    step();
                } else {
                    // The same from every instance (they share one database and its
                    // policies): the caller's to see, at once.
                    answered(instance);
                    result.completeExceptionally(new IdmintException(status, response.body(), null));
                }
            });
        }

        private void failed(Instance instance, String reason, Throwable cause) {
            String scrubbed = instance.scrub(reason);
            why.put(instance, scrubbed);
            lastCause = cause;
            markFailed(instance, scrubbed);
        }

        private void giveUp() {
            StringBuilder message = new StringBuilder("no idmint serve instance gave ")
                    .append(what).append(" within ").append(show(settings.deadline())).append(": ");
            List<String> parts = new ArrayList<>();
            synchronized (Servers.this) {
                long now = time.nanos();
                for (Instance instance : instances) {
                    String reason = why.get(instance);
                    if (reason != null) {
                        parts.add(instance.shown + " " + reason + " (set aside for " + show(instance.setAsideFor) + ")");
                    } else if (instance.failuresInARow > 0 && instance.setAsideUntil - now > 0) {
                        parts.add(instance.shown + " not asked: set aside after " + instance.lastError);
                    } else {
                        parts.add(instance.shown + " not asked before the deadline");
                    }
                }
            }
            message.append(String.join("; ", parts));
            result.completeExceptionally(new IdmintException(message.toString(), lastCause));
        }
    }

    /** A random instance not tried in this round and not set aside; see the class doc. */
    private synchronized Instance pick(long now, Set<Instance> tried) {
        List<Instance> eligible = new ArrayList<>(instances.size());
        Instance soonest = null;
        for (Instance instance : instances) {
            if (tried.contains(instance)) {
                continue;
            }
            if (instance.failuresInARow == 0 || instance.setAsideUntil - now <= 0) {
                eligible.add(instance);
            } else if (soonest == null || instance.setAsideUntil - soonest.setAsideUntil < 0) {
                soonest = instance;
            }
        }
        if (!eligible.isEmpty()) {
            return eligible.get(ThreadLocalRandom.current().nextInt(eligible.size()));
        }
        return tried.isEmpty() ? soonest : null;
    }

    private synchronized void answered(Instance instance) {
        instance.failuresInARow = 0;
        instance.setAsideFor = 0;
        instance.answers++;
    }

    private synchronized void markFailed(Instance instance, String reason) {
        instance.failuresInARow++;
        instance.failures++;
        long setAside = settings.setAsideFirst();
        for (int i = 1; i < instance.failuresInARow && setAside < settings.setAsideMax(); i++) {
            setAside *= 2;
        }
        instance.setAsideFor = Math.min(setAside, settings.setAsideMax());
        instance.setAsideUntil = time.nanos() + instance.setAsideFor;
        instance.lastError = reason;
    }

    /** Between half and all of the round's backoff: first, doubled each round, capped. */
    private long backoff(int round) {
        long backoff = settings.backoffFirst();
        for (int i = 1; i < round && backoff < settings.backoffMax(); i++) {
            backoff *= 2;
        }
        backoff = Math.min(backoff, settings.backoffMax());
        return backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
    }

    /** Per instance, for tests and diagnostics: answers, failures, and the set-aside now in force (ns, 0 for none). */
    synchronized long[][] health() {
        long now = time.nanos();
        long[][] health = new long[instances.size()][];
        for (int i = 0; i < health.length; i++) {
            Instance instance = instances.get(i);
            long left = instance.failuresInARow == 0 ? 0 : Math.max(0, instance.setAsideUntil - now);
            health[i] = new long[] {instance.answers, instance.failures, left};
        }
        return health;
    }

    /**
     * Whether an answer other than 200 is this instance's failure, worth
     * asking another: 408, 429, and a 5xx, unless its error kind says every
     * instance would fail alike ({@link #SHARED_FAILURES}). Any other answer
     * (4xx: an unknown counter, a bad token, a bad request) is every
     * instance's.
     */
    static boolean isInstanceFailure(int status, String body) {
        if (status == 408 || status == 429) {
            return true;
        }
        return status >= 500 && !SHARED_FAILURES.contains(errorKind(body));
    }

    /**
     * The error kinds of a 5xx that every instance would answer (the
     * service's {@code ErrorBody}): {@code policy}, the policy failed to
     * format or read the values taken; asking another instance takes fresh
     * values only to fail again. {@code unavailable}, {@code overloaded} and
     * {@code internal} are one instance's state: another may answer.
     */
    private static final Set<String> SHARED_FAILURES = Set.of("policy");

    /** {@code {"error": KIND, ...}}: the service writes the kind first. */
    private static final Pattern ERROR_KIND = Pattern.compile("\\A\\s*\\{\\s*\"error\"\\s*:\\s*\"([a-z-]+)\"");

    /** The error kind of a JSON error body, or "" (a proxy's page, an empty body). */
    static String errorKind(String body) {
        Matcher kind = ERROR_KIND.matcher(body == null ? "" : body);
        return kind.lookingAt() ? kind.group(1) : "";
    }

    private static String describe(Throwable cause) {
        String name = cause.getClass().getSimpleName();
        return cause.getMessage() == null ? "failed: " + name : "failed: " + name + ": " + cause.getMessage();
    }

    private static String shorten(String body) {
        String line = body == null ? "" : body.strip().replace('\n', ' ');
        return line.length() <= 200 ? line : line.substring(0, 200) + "...";
    }

    static String show(long nanos) {
        if (nanos % 1_000_000_000L == 0) {
            return nanos / 1_000_000_000L + " s";
        }
        return TimeUnit.NANOSECONDS.toMillis(nanos) + " ms";
    }
}
