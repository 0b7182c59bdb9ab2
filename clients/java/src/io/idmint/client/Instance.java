package io.idmint.client;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * One {@code idmint serve} a client may ask: its base URL (credentials
 * removed) and its health, which {@link Servers} keeps under its own lock.
 */
final class Instance {
    /** The base URL requests resolve against: no user info, path ending in '/'. */
    final URI base;
    /** How errors name it: the base URL, which never holds credentials. */
    final String shown;
    /** The user info the URL was given with, removed from anything shown; null if none. */
    private final String userInfo;

    // Health, guarded by the Servers lock.
    /** Failures in a row since the last answer. */
    int failuresInARow;
    /** Until when (Time.nanos) it is set aside; meaningful when failuresInARow > 0. */
    long setAsideUntil;
    /** How long the current set-aside is, in nanoseconds. */
    long setAsideFor;
    /** Why it last failed, or null. */
    String lastError;
    /** Answers (values) it gave, and failures, since the client started: for tests and diagnostics. */
    long answers;
    long failures;

    private Instance(URI base, String userInfo) {
        this.base = base;
        this.shown = base.toString();
        this.userInfo = userInfo;
    }

    /** Checks a server URL; the error never repeats credentials it may hold. */
    static Instance parse(String url) {
        if (url == null) {
            throw new IllegalArgumentException("a server URL is null");
        }
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException error) {
            // Not the URL itself: it may hold a password.
            throw new IllegalArgumentException("a server URL is not a URL: " + error.getReason()
                    + (error.getIndex() >= 0 ? " at character " + error.getIndex() : ""), null);
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(java.util.Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            throw new IllegalArgumentException("server URL " + redact(uri) + " must start with http:// or https://");
        }
        if (uri.getHost() == null) {
            throw new IllegalArgumentException("server URL " + redact(uri) + " has no host (or one Java cannot read)");
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw new IllegalArgumentException("server URL " + redact(uri) + " must have no query or fragment");
        }
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        if (!path.endsWith("/")) {
            path += "/"; // so that "v1/..." resolves below it, not beside it
        }
        URI base = URI.create(scheme + "://" + authority(uri) + path);
        return new Instance(base, uri.getRawUserInfo());
    }

    private static String authority(URI uri) {
        String host = uri.getHost();
        return host + (uri.getPort() == -1 ? "" : ":" + uri.getPort());
    }

    private static String redact(URI uri) {
        return (uri.getScheme() == null ? "" : uri.getScheme() + "://")
                + (uri.getHost() == null ? "?" : authority(uri))
                + (uri.getRawPath() == null ? "" : uri.getRawPath());
    }

    /** {@code text} with the URL's user info, if any, blanked out. */
    String scrub(String text) {
        if (text == null || userInfo == null || userInfo.isEmpty()) {
            return text;
        }
        return text.replace(userInfo, "***");
    }
}
