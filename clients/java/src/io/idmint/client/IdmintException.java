package io.idmint.client;

/**
 * A request to {@code idmint serve} failed: the HTTP status (0 when no answer
 * came) and the server's JSON error body, which names the kind of error
 * ({@code unknown-counter}, {@code bad-request}, ...) and says what went wrong.
 */
public final class IdmintException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String body;

    IdmintException(int status, String body, Throwable cause) {
        super(status == 0 ? "idmint serve did not answer: " + body : "idmint serve answered " + status + ": " + body, cause);
        this.status = status;
        this.body = body;
    }

    /** The HTTP status, or 0 when the server could not be reached. */
    public int status() {
        return status;
    }

    /** The server's error body (JSON), or the transport error's text. */
    public String body() {
        return body;
    }
}
