package io.idmint.client;

import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionException;

/**
 * Numbers of a gap-free series of {@code idmint serve}, for invoices: a
 * number is <em>reserved</em>, then <em>confirmed</em> with the business
 * reference or <em>voided</em> with a reason (docs/gap-free.md,
 * "Reservations"). A reservation not confirmed by its deadline is voided
 * {@code "expired"} by the service, never handed to anyone else. Thread-safe;
 * share one per series.
 *
 * <p>Every call fails over between instances as the other clients do (see
 * {@link ClientBuilder}), and is safe to send again: a reserve carries a
 * client key (one of the caller's, or a random one per call), so a reserve
 * whose answer was lost and that is asked again, of this instance or
 * another, answers the number reserved the first time and takes none; a
 * confirm or void asked again answers {@code already}. Refusals (a number
 * confirmed with another reference, voided, expired: 409; no such series or
 * number: 404) reach the caller at once as an {@link IdmintException}.
 *
 * <pre>{@code
 * SeriesClient invoices = SeriesClient.builder()
 *         .servers("http://idmint-1:8080/", "http://idmint-2:8080/")
 *         .series("invoices")
 *         .build();
 * SeriesClient.Reservation number = invoices.reserve(Duration.ofMinutes(5), "order-7731");
 * // ... write the invoice with number.number() ...
 * invoices.confirm(number, "INV-7731");
 * }</pre>
 */
public final class SeriesClient implements AutoCloseable {
    /**
     * A number reserved.
     *
     * @param series the series
     * @param period the label of its period ({@code "2026"}), empty for a series without periods
     * @param number the number
     * @param state {@code reserved}; for a client key's earlier reservation, what it is now
     * @param deadline until when it may be confirmed (the server's clock, RFC 3339)
     * @param reused whether an earlier call with the same client key reserved it
     */
    public record Reservation(String series, String period, long number, String state, String deadline,
            boolean reused) {}

    /**
     * A number confirmed or voided.
     *
     * @param series the series
     * @param period the label of its period, empty for a series without periods
     * @param number the number
     * @param state {@code confirmed} or {@code voided}
     * @param reference the reference it is confirmed with, or null
     * @param reason why it is voided, or null
     * @param already whether it was so already (a call asked again): nothing was written
     */
    public record Settled(String series, String period, long number, String state, String reference,
            String reason, boolean already) {}

    /** The settings of a {@link SeriesClient}; see {@link ClientBuilder}. */
    public static final class Builder extends ClientBuilder<Builder, SeriesClient> {
        Builder() {
            super(1);
        }

        /**
         * The series' name (what {@link #counter} names for the other clients).
         *
         * @param name the series
         * @return this builder
         */
        public Builder series(String name) {
            return counter(name);
        }

        @Override
        public SeriesClient build() {
            return new SeriesClient(settings());
        }
    }

    private final Servers servers;
    private final String path;
    private final String what;

    private SeriesClient(ClientBuilder.Settings settings) {
        this.what = "series '" + settings.counter() + "'";
        this.servers = new Servers(settings, what);
        this.path = "v1/series/" + ValueClient.encode(settings.counter()) + "/reservations";
    }

    /**
     * A builder: {@code servers(...)} and {@code series(...)} are required.
     *
     * @return a builder with the defaults {@link ClientBuilder} states
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A client of {@code series} on the one server at {@code base}.
     *
     * @param base the server's base URL
     * @param series the series' name
     * @param token the bearer token, or {@code null} when the server needs none
     * @return the client
     */
    public static SeriesClient create(URI base, String series, String token) {
        return builder().servers(base).series(series).token(token).build();
    }

    /**
     * Reserves the next number for {@code ttl} under a random client key
     * (this call's retries, across instances, take one number).
     *
     * @param ttl the time to live, 1 s to 7 days, whole seconds
     * @return the number reserved
     * @throws IdmintException when the service refused or no instance answered in time
     */
    public Reservation reserve(Duration ttl) {
        return reserve(ttl, UUID.randomUUID().toString());
    }

    /**
     * Reserves the next number for {@code ttl} under {@code clientKey}: a
     * reserve with a key already used answers that reservation (in the state
     * it is in now, {@code reused}) and takes none, so an application can
     * call again with its own key (its order's id) after a crash.
     *
     * @param ttl the time to live, 1 s to 7 days, whole seconds
     * @param clientKey the caller's key, 1 to 128 characters
     * @return the number reserved
     * @throws IdmintException when the service refused or no instance answered in time
     */
    public Reservation reserve(Duration ttl, String clientKey) {
        String body = "{\"ttl_s\":" + ttl.toSeconds() + ",\"client_key\":" + quote(clientKey) + "}";
        Map<String, Object> answer = call(path, body);
        return new Reservation(text(answer, "series"), textOr(answer, "period", ""), number(answer),
                text(answer, "state"), text(answer, "deadline"), Boolean.TRUE.equals(answer.get("reused")));
    }

    /**
     * Confirms a reserved number with the business reference, before its deadline.
     *
     * @param reservation the reservation
     * @param reference the business reference (the invoice's id), 1 to 512 characters
     * @return the number, confirmed ({@code already} when it was, with this reference)
     * @throws IdmintException 409 when it is confirmed otherwise, voided or expired; 404 when never reserved
     */
    public Settled confirm(Reservation reservation, String reference) {
        return settle(reservation.number(), reservation.period(), "confirm", "reference", reference);
    }

    /**
     * Voids a reserved number with a reason (kept for the audit).
     *
     * @param reservation the reservation
     * @param reason why the number is not used, 1 to 512 characters
     * @return the number, voided ({@code already} when it was)
     * @throws IdmintException 409 when it is confirmed; 404 when never reserved
     */
    public Settled voidNumber(Reservation reservation, String reason) {
        return settle(reservation.number(), reservation.period(), "void", "reason", reason);
    }

    private Settled settle(long number, String period, String action, String field, String text) {
        String body = "{" + quote(field) + ":" + quote(text)
                + (period.isEmpty() ? "" : ",\"period\":" + quote(period)) + "}";
        Map<String, Object> answer = call(path + "/" + number + "/" + action, body);
        return new Settled(text(answer, "series"), textOr(answer, "period", ""), number(answer),
                text(answer, "state"), textOr(answer, "reference", null), textOr(answer, "reason", null),
                Boolean.TRUE.equals(answer.get("already")));
    }

    /** Per instance, for tests and diagnostics: answers, failures, set-aside now in force (ns). */
    long[][] health() {
        return servers.health();
    }

    /** Stops the calls in progress and any later one. */
    @Override
    public void close() {
        servers.close();
    }

    private Map<String, Object> call(String route, String body) {
        String answer;
        try {
            answer = servers.post(route, body).join();
        } catch (CompletionException error) {
            if (error.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw error;
        }
        try {
            return parseObject(answer);
        } catch (RuntimeException error) {
            throw new IdmintException(200, "not an answer about " + what + ": " + answer, error);
        }
    }

    private String text(Map<String, Object> answer, String field) {
        Object value = answer.get(field);
        if (!(value instanceof String text)) {
            throw new IdmintException(200, "an answer about " + what + " without \"" + field + "\"", null);
        }
        return text;
    }

    private static String textOr(Map<String, Object> answer, String field, String otherwise) {
        return answer.get(field) instanceof String text ? text : otherwise;
    }

    private long number(Map<String, Object> answer) {
        if (!(answer.get("number") instanceof Long number)) {
            throw new IdmintException(200, "an answer about " + what + " without a number", null);
        }
        return number;
    }

    /** A JSON string of {@code text}. */
    static String quote(String text) {
        StringBuilder quoted = new StringBuilder(text.length() + 2).append('"');
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> quoted.append("\\\"");
                case '\\' -> quoted.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        quoted.append(String.format("\\u%04x", (int) c));
                    } else {
                        quoted.append(c);
                    }
                }
            }
        }
        return quoted.append('"').toString();
    }

    /**
     * A flat JSON object (strings, whole numbers, booleans, null), as the
     * service answers these routes; anything else is refused.
     */
    static Map<String, Object> parseObject(String json) {
        Map<String, Object> object = new HashMap<>();
        int[] at = {skip(json, 0)};
        expect(json, at, '{');
        if (peek(json, at) == '}') {
            return object;
        }
        for (;;) {
            String key = parseString(json, at);
            expect(json, at, ':');
            at[0] = skip(json, at[0]);
            char c = json.charAt(at[0]);
            Object value;
            if (c == '"') {
                value = parseString(json, at);
            } else if (json.startsWith("true", at[0])) {
                value = Boolean.TRUE;
                at[0] += 4;
            } else if (json.startsWith("false", at[0])) {
                value = Boolean.FALSE;
                at[0] += 5;
            } else if (json.startsWith("null", at[0])) {
                value = null;
                at[0] += 4;
            } else {
                int start = at[0];
                while (at[0] < json.length() && (Character.isDigit(json.charAt(at[0])) || json.charAt(at[0]) == '-')) {
                    at[0]++;
                }
                value = Long.parseLong(json.substring(start, at[0]));
            }
            object.put(key, value);
            if (peek(json, at) == ',') {
                at[0]++;
                continue;
            }
            expect(json, at, '}');
            return object;
        }
    }

    private static String parseString(String json, int[] at) {
        expect(json, at, '"');
        StringBuilder text = new StringBuilder();
        for (;;) {
            char c = json.charAt(at[0]++);
            if (c == '"') {
                return text.toString();
            }
            if (c != '\\') {
                text.append(c);
                continue;
            }
            char escaped = json.charAt(at[0]++);
            switch (escaped) {
                case 'n' -> text.append('\n');
                case 't' -> text.append('\t');
                case 'r' -> text.append('\r');
                case 'b' -> text.append('\b');
                case 'f' -> text.append('\f');
                case 'u' -> {
                    text.append((char) Integer.parseInt(json.substring(at[0], at[0] + 4), 16));
                    at[0] += 4;
                }
                default -> text.append(escaped);
            }
        }
    }

    private static char peek(String json, int[] at) {
        at[0] = skip(json, at[0]);
        return json.charAt(at[0]);
    }

    private static void expect(String json, int[] at, char c) {
        if (peek(json, at) != c) {
            throw new IllegalArgumentException("expected '" + c + "' at " + at[0]);
        }
        at[0]++;
    }

    private static int skip(String json, int at) {
        while (at < json.length() && Character.isWhitespace(json.charAt(at))) {
            at++;
        }
        return at;
    }
}
