package io.idmint.client;

/**
 * A fetch from {@code idmint serve} failed. Either an instance gave an
 * answer that every instance would give (the counter does not exist, the
 * token may not use it, a bad request, the policy failed on the values
 * taken: 500 {@code policy}): then {@link #status()} is its HTTP
 * status and {@link #body()} its JSON error body, which names the kind of
 * error ({@code unknown-counter}, {@code forbidden}, ...) and says what went
 * wrong. Or no instance gave an answer within the client's deadline: then
 * the status is 0 and the message names each instance and why it failed
 * (URLs without credentials).
 */
public final class IdmintException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** The HTTP status, or 0 when no instance gave an answer in time. */
    private final int status;
    /** The server's error body, or the summary of each instance's failure. */
    private final String body;

    /** An answer that was not 200. */
    IdmintException(int status, String body, Throwable cause) {
        super("idmint serve answered " + status + ": " + body, cause);
        this.status = status;
        this.body = body;
    }

    /** No instance answered in time: {@code summary} names each and why. */
    IdmintException(String summary, Throwable cause) {
        super(summary, cause);
        this.status = 0;
        this.body = summary;
    }

    /** The same failure, thrown again in the thread of another caller of the fetch. */
    IdmintException(IdmintException shared) {
        super(shared.getMessage(), shared);
        this.status = shared.status;
        this.body = shared.body;
    }

    /**
     * The HTTP status of the answer.
     *
     * @return the status, or 0 when no instance gave an answer in time
     */
    public int status() {
        return status;
    }

    /**
     * The server's error body.
     *
     * @return the JSON error body, or (status 0) the summary of each instance's failure
     */
    public String body() {
        return body;
    }
}
