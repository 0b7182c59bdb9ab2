package io.idmint.client;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A controlled HTTP peer in the test process, standing in for
 * {@code idmint serve} where a check needs a server that fails on command
 * or holds an answer until released: the client's own behaviour under
 * failure, not the service's, is what those checks are about.
 */
final class Peer implements AutoCloseable {
    /** How long a check waits for an event before it fails. */
    static final long EVENT_SECONDS = 30;

    /** An answer: status and text body. */
    record Reply(int status, String body) {}

    /** What the peer answers; {@code number} counts this peer's requests from 1. */
    interface Script {
        Reply answer(Peer peer, int number) throws Exception;
    }

    static {
        // Small answers on a kept-alive connection otherwise wait out the
        // client's delayed ACK (40 ms each on Linux).
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    final String name;
    final URI url;
    private final HttpServer server;
    private final ExecutorService executor;
    private final AtomicInteger requests = new AtomicInteger();
    volatile Script script;

    Peer(String name, Script script) throws IOException {
        this.name = name;
        this.script = script;
        this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        // A thread per request: one held answer must not hold up the others.
        this.executor = Executors.newCachedThreadPool(runnable -> {
            Thread thread = new Thread(runnable, "peer-" + name);
            thread.setDaemon(true);
            return thread;
        });
        server.setExecutor(executor);
        server.createContext("/", exchange -> {
            Reply reply;
            try {
                reply = this.script.answer(this, requests.incrementAndGet());
            } catch (Exception error) {
                reply = new Reply(599, "the peer's script failed: " + error);
            }
            byte[] body = reply.body().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain");
            exchange.sendResponseHeaders(reply.status(), body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            } catch (IOException gone) {
                // The client gave up on this request: nothing to answer.
            }
        });
        server.start();
        this.url = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
    }

    /** Requests that reached the peer so far. */
    int requests() {
        return requests.get();
    }

    /** 200 with the run of the next {@code count} values of {@code next}. */
    static Reply run(AtomicLong next, long count) {
        long first = next.getAndAdd(count);
        return new Reply(200, first + " " + (first + count - 1) + "\n");
    }

    static Reply status(int status, String body) {
        return new Reply(status, body);
    }

    /** Waits for {@code latch}, failing the check if it does not open in time. */
    static void await(CountDownLatch latch, String event) throws InterruptedException {
        if (!latch.await(EVENT_SECONDS, TimeUnit.SECONDS)) {
            ClientCheck.require(false, event + " did not happen within " + EVENT_SECONDS + " s");
        }
    }

    /** Joins {@code thread}, failing the check if it does not end in time. */
    static void join(Thread thread, String what) throws InterruptedException {
        thread.join(TimeUnit.SECONDS.toMillis(EVENT_SECONDS));
        ClientCheck.require(!thread.isAlive(), what + " did not end within " + EVENT_SECONDS + " s");
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
