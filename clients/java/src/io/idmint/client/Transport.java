package io.idmint.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** GET requests to one {@code idmint serve}, with the bearer token if any. */
final class Transport {
    private final HttpClient http;
    private final URI base;
    private final String token;
    private final Duration timeout;

    Transport(URI base, String token, Duration timeout) {
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(timeout)
                .build();
        this.base = base;
        this.token = token;
        this.timeout = timeout;
    }

    /** The body of {@code GET path} as text, or an {@link IdmintException}. */
    CompletableFuture<String> getText(String path) {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path))
                .timeout(timeout)
                .header("Accept", "text/plain")
                .GET();
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return http.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString())
                .handle((response, error) -> {
                    if (error != null) {
                        Throwable cause = error instanceof CompletionException ? error.getCause() : error;
                        throw new IdmintException(0, String.valueOf(cause), cause);
                    }
                    if (response.statusCode() != 200) {
                        throw new IdmintException(response.statusCode(), response.body(), null);
                    }
                    return response.body();
                });
    }

    static String encode(String text) {
        return java.net.URLEncoder.encode(text, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Waits for {@code future}, unwrapping the failure. */
    static <T> T await(CompletableFuture<T> future) {
        try {
            return future.join();
        } catch (CompletionException error) {
            if (error.getCause() instanceof IdmintException idmint) {
                throw idmint;
            }
            throw new IdmintException(0, String.valueOf(error.getCause()), error.getCause());
        }
    }

}
