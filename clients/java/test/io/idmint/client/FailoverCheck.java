package io.idmint.client;

import static io.idmint.client.ClientCheck.require;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Failover over several instances (issue 20), against {@link Peer}s that
 * fail on command and a {@link FakeTime} that moves only when a check or a
 * backoff moves it: a failed instance is set aside, for longer at each
 * failure in a row up to the cap, and asked again once that time is over;
 * every instance failing is an error only at the deadline, naming each
 * (without credentials); the buffer keeps serving while a fetch fails over;
 * a failure every instance would give (500 {@code policy}) is the caller's
 * at once, with no other instance asked.
 * Run by {@code tests/java_client.rs}; prints one line per check and exits
 * 1 on the first failure.
 */
public final class FailoverCheck {
    private static final String PATH = "v1/counters/c/ranges?count=1";
    /** Fetches enough that a random choice between two misses one of them with odds of 2^-200. */
    private static final int TRIES = 200;

    public static void main(String[] args) throws Exception {
        aFailedInstanceIsSetAsideAndAskedAgainLater();
        everyInstanceFailingIsOneErrorAtTheDeadline();
        theBufferServesWhileAFetchFailsOver();
        aFailureEveryInstanceWouldGiveReachesTheCallerAtOnce();
    }

    /**
     * A fails whenever asked, B answers. After each failure in a row A is
     * left out for 1, 2, 4, then 4 s (the cap): fetches in the meantime go
     * to B, and the first fetch after the time is over may go to A again.
     * An answer from A ends the run: its next failure sets it aside for 1 s.
     */
    static void aFailedInstanceIsSetAsideAndAskedAgainLater() throws Exception {
        AtomicLong values = new AtomicLong(1);
        AtomicReference<Peer.Reply> aAnswers = new AtomicReference<>(Peer.status(503, "{\"error\":\"unavailable\"}"));
        FakeTime time = new FakeTime();
        try (Peer a = new Peer("a", (self, number) -> {
                    Peer.Reply reply = aAnswers.get();
                    return reply.status() == 200 ? Peer.run(values, 1) : reply;
                });
                Peer b = new Peer("b", (self, number) -> Peer.run(values, 1))) {
            ValueClient client = ValueClient.builder()
                    .servers(a.url, b.url)
                    .counter("c")
                    .setAside(Duration.ofSeconds(1), Duration.ofSeconds(4))
                    .time(time)
                    .build();
            Servers servers = client.servers();
            long[] expected = {1, 2, 4, 4};
            for (int failure = 1; failure <= expected.length; failure++) {
                fetchUntil(servers, a, failure, "A's failure " + failure);
                long setAside = servers.health()[0][2];
                require(setAside == Duration.ofSeconds(expected[failure - 1]).toNanos(),
                        "after " + failure + " failures in a row A is set aside for " + setAside + " ns, not "
                                + expected[failure - 1] + " s");
                // Until the set-aside is over, every fetch goes to B.
                time.advance(Duration.ofNanos(setAside - 1));
                for (int i = 0; i < 50; i++) {
                    fetch(servers);
                }
                require(a.requests() == failure, "A was asked while set aside (" + a.requests() + " requests)");
                time.advance(Duration.ofNanos(1));
            }
            aAnswers.set(Peer.status(200, ""));
            fetchUntil(servers, a, 5, "A's answer");
            require(servers.health()[0][2] == 0, "A answered and is still set aside");
            aAnswers.set(Peer.status(500, "{\"error\":\"internal\"}"));
            fetchUntil(servers, a, 6, "A's failure after an answer");
            require(servers.health()[0][2] == Duration.ofSeconds(1).toNanos(),
                    "after an answer, A's next failure set it aside for " + servers.health()[0][2] + " ns, not 1 s");
            require(servers.health()[1][1] == 0, "B counted failures");
            client.close();
        }
        System.out.println("set aside ok");
    }

    /** Fetches (each must succeed) until {@code peer} has been asked {@code requests} times. */
    private static void fetchUntil(Servers servers, Peer peer, int requests, String event) {
        for (int i = 0; i < TRIES && peer.requests() < requests; i++) {
            fetch(servers);
        }
        require(peer.requests() == requests, event + ": " + peer.name + " asked " + peer.requests()
                + " times after up to " + TRIES + " fetches, not " + requests);
    }

    private static String fetch(Servers servers) {
        try {
            return servers.get(PATH).join();
        } catch (CompletionException failed) {
            require(false, "a fetch failed while an instance was up: " + failed.getCause());
            return null;
        }
    }

    /**
     * A answers 503, C's port is closed (and its URL holds a password):
     * the fetch goes round with backoffs until the 10 s deadline, and only
     * then fails, with one error naming both and why, and no password.
     */
    static void everyInstanceFailingIsOneErrorAtTheDeadline() throws Exception {
        FakeTime time = new FakeTime();
        try (Peer a = new Peer("a", (self, number) ->
                Peer.status(503, "{\"error\":\"unavailable\",\"message\":\"the database is unreachable\"}"))) {
            // A port nothing listens on, taken while A listens: one freed
            // before A started could be A's (it was, once).
            int closedPort;
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                closedPort = socket.getLocalPort();
            }
            ValueClient client = ValueClient.builder()
                    .servers(a.url.toString(), "http://app:s3cret@127.0.0.1:" + closedPort + "/idmint")
                    .counter("c")
                    .deadline(Duration.ofSeconds(10))
                    .time(time)
                    .build();
            long start = time.nanos();
            try {
                client.servers().get(PATH).join();
                require(false, "a fetch with every instance down gave an answer");
            } catch (CompletionException failed) {
                long waited = time.nanos() - start;
                String message = failed.getCause().getMessage();
                require(failed.getCause() instanceof IdmintException error && error.status() == 0, message);
                require(waited >= Duration.ofSeconds(10).toNanos(), "the fetch gave up after " + waited + " ns, before its 10 s deadline");
                require(message.startsWith("no idmint serve instance gave counter 'c' within 10 s: "), message);
                require(message.contains(a.url + " answered 503: {\"error\":\"unavailable\",\"message\":\"the database is unreachable\"}"), message);
                require(message.contains("http://127.0.0.1:" + closedPort + "/idmint/ failed: ConnectException"), message);
                require(!message.contains("s3cret") && !message.contains("app:"), "credentials in " + message);
                require(a.requests() >= 2, "A was asked " + a.requests() + " times in 10 s of rounds");
            }
            client.close();
        }
        System.out.println("deadline ok");
    }

    /**
     * The background fetch (at 80% of a batch of 10) goes to an instance
     * that holds it and then fails: meanwhile the rest of the batch is
     * handed out; the fetch then fails over to the other instance, whose
     * values the next taker gets, with no error.
     */
    static void theBufferServesWhileAFetchFailsOver() throws Exception {
        AtomicLong values = new AtomicLong(1);
        AtomicInteger requests = new AtomicInteger();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<String> failedOn = new AtomicReference<>();
        AtomicReference<String> answeredBy = new AtomicReference<>();
        Peer.Script script = (self, number) -> {
            int request = requests.incrementAndGet();
            if (request == 2) {
                failedOn.set(self.name);
                held.countDown();
                Peer.await(release, "the release of the held answer");
                return Peer.status(503, "{\"error\":\"overloaded\"}");
            }
            if (request == 3) {
                answeredBy.set(self.name);
            }
            return Peer.run(values, 10);
        };
        try (Peer a = new Peer("a", script); Peer b = new Peer("b", script)) {
            ValueClient client = ValueClient.builder()
                    .servers(a.url, b.url)
                    .counter("c")
                    .batch(10)
                    .time(new FakeTime())
                    .build();
            for (long expected = 1; expected <= 9; expected++) {
                require(client.next() == expected, "value " + expected);
            }
            Peer.await(held, "the background fetch reaching an instance");
            require(client.next() == 10, "the buffer's last value while the fetch is held");
            release.countDown();
            long next = client.next();
            require(next == 11, "the value after the failover is " + next + ", not 11");
            require(requests.get() == 3, requests.get() + " requests, not 3");
            require(!failedOn.get().equals(answeredBy.get()), "the fetch went back to " + failedOn.get() + ", which had just failed");
            client.close();
        }
        System.out.println("serves while failing over ok");
    }

    /**
     * Issue 31: both instances answer 500 {@code policy} (the policy failed
     * on the values taken): the first answer is the caller's error at once,
     * on a clock that never moves, with the other instance not asked and
     * neither set aside. A 503 {@code unavailable}, a 500 {@code internal}
     * and a 502 without the service's body still fail over.
     */
    static void aFailureEveryInstanceWouldGiveReachesTheCallerAtOnce() throws Exception {
        String policy = "{\"error\":\"policy\",\"message\":\"the policy failed to format or read these IDs\"}";
        try (Peer a = new Peer("a", (self, number) -> Peer.status(500, policy));
                Peer b = new Peer("b", (self, number) -> Peer.status(500, policy))) {
            ValueClient client = ValueClient.builder()
                    .servers(a.url, b.url)
                    .counter("c")
                    .time(new FakeTime())
                    .build();
            try {
                client.servers().get(PATH).join();
                require(false, "a fetch answered 500 policy gave values");
            } catch (CompletionException failed) {
                require(failed.getCause() instanceof IdmintException error && error.status() == 500
                        && error.body().equals(policy), "not the instance's answer: " + failed.getCause());
            }
            int asked = a.requests() + b.requests();
            require(asked == 1, asked + " requests for one failure every instance gives, not 1");
            for (long[] health : client.servers().health()) {
                require(health[1] == 0, "an instance was counted failed for a policy failure");
            }
            client.close();
        }
        require(!Servers.isInstanceFailure(500, policy), "500 policy is one instance's failure");
        require(!Servers.isInstanceFailure(404, "{\"error\":\"unknown-counter\"}"), "404 is one instance's failure");
        for (String kind : new String[] {"unavailable", "overloaded", "internal"}) {
            require(Servers.isInstanceFailure(kind.equals("internal") ? 500 : 503, "{\"error\":\"" + kind + "\"}"),
                    kind + " is not failed over");
        }
        require(Servers.isInstanceFailure(502, "<html>Bad Gateway</html>"), "a proxy's 502 is not failed over");
        require(Servers.isInstanceFailure(429, ""), "429 is not failed over");
        System.out.println("shared failure at once ok");
    }
}
