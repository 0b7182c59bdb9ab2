package io.idmint.client;

import static io.idmint.client.ClientCheck.require;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The shared buffer's fetches under failure (issue 18), against a
 * {@link Peer} that holds or fails answers on command: one fetch in flight
 * for any number of takers, waited on outside the lock and for a bounded
 * time; a failure reaches the takers of that fetch only; bad settings are
 * refused by name. Run by {@code tests/java_client.rs}; prints one line per
 * check and exits 1 on the first failure.
 */
public final class FetchCheck {
    public static void main(String[] args) throws Exception {
        oneFetchServesEveryWaitingTaker();
        closeWakesATakerWaitingOnAStalledFetch();
        aFailedBackgroundFetchIsNotThrownAtALaterTaker();
        aFailureReachesTheTakersOfThatFetchOnly();
        aStalledServerIsABoundedWaitAndANamedError();
        badSettingsAreRefusedByName();
    }

    /** Records the takers that start waiting and the fetches that end. */
    static final class Watch implements Prefetching.Hooks {
        final CountDownLatch waiting;
        final LinkedBlockingQueue<String> landed = new LinkedBlockingQueue<>();

        Watch(int waiters) {
            this.waiting = new CountDownLatch(waiters);
        }

        @Override
        public void waiting() {
            waiting.countDown();
        }

        @Override
        public void landed(Throwable error) {
            landed.add(error == null ? "values" : String.valueOf(error));
        }

        String nextLanding() throws InterruptedException {
            String landing = landed.poll(Peer.EVENT_SECONDS, TimeUnit.SECONDS);
            require(landing != null, "no fetch ended within " + Peer.EVENT_SECONDS + " s");
            return landing;
        }
    }

    /** Runs {@code body} in a new thread; what it returned or threw lands in {@code outcome}. */
    static Thread taker(String name, Set<Object> outcomes, ThrowingSupplier body) {
        Thread thread = new Thread(() -> {
            try {
                outcomes.add(body.get());
            } catch (Throwable error) {
                outcomes.add(error);
            }
        }, name);
        thread.start();
        return thread;
    }

    interface ThrowingSupplier {
        Object get() throws Exception;
    }

    /**
     * Four takers find the buffer empty at once while the server holds its
     * answer: all four wait (so none holds the lock while waiting), on one
     * request, and share its values.
     */
    static void oneFetchServesEveryWaitingTaker() throws Exception {
        AtomicLong values = new AtomicLong(1);
        CountDownLatch arrived = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (Peer peer = new Peer("one", (self, number) -> {
            arrived.countDown();
            Peer.await(release, "the release of the held answer");
            return Peer.run(values, 10);
        })) {
            ValueClient client = ValueClient.builder().servers(peer.url).counter("c").batch(10).build();
            Watch watch = new Watch(4);
            client.hooks = watch;
            Set<Object> outcomes = ConcurrentHashMap.newKeySet();
            List<Thread> takers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                takers.add(taker("taker-" + i, outcomes, client::next));
            }
            Peer.await(watch.waiting, "four takers waiting on the fetch, none holding the lock,");
            Peer.await(arrived, "the fetch reaching the server");
            release.countDown();
            for (Thread taker : takers) {
                Peer.join(taker, taker.getName());
            }
            require(outcomes.equals(Set.of(1L, 2L, 3L, 4L)), "four takers got " + outcomes + ", not 1 to 4");
            require(peer.requests() == 1, "four waiting takers sent " + peer.requests() + " requests, not one");
            client.close();
        }
        System.out.println("one fetch ok");
    }

    /**
     * A taker waits on a fetch the server holds; close() from another
     * thread returns without waiting for it (the lock is free), the taker
     * is told the client is closed, and so is every later call.
     */
    static void closeWakesATakerWaitingOnAStalledFetch() throws Exception {
        CountDownLatch arrived = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (Peer peer = new Peer("stalled", (self, number) -> {
            arrived.countDown();
            Peer.await(release, "the release of the held answer");
            return Peer.run(new AtomicLong(1), 10);
        })) {
            ValueClient client = ValueClient.builder().servers(peer.url).counter("c").batch(10).build();
            Watch watch = new Watch(1);
            client.hooks = watch;
            Set<Object> outcomes = ConcurrentHashMap.newKeySet();
            Thread taker = taker("taker", outcomes, client::next);
            Peer.await(watch.waiting, "the taker waiting on the fetch");
            Peer.await(arrived, "the fetch reaching the server");
            Thread closer = new Thread(client::close, "closer");
            closer.start();
            Peer.join(closer, "close() while a taker waits on a held fetch");
            Peer.join(taker, "the taker of a closed client");
            Object outcome = outcomes.iterator().next();
            require(outcome instanceof IllegalStateException closed && closed.getMessage().contains("closed"),
                    "the waiting taker of a closed client got " + outcome);
            try {
                client.next();
                require(false, "a closed client gave a value");
            } catch (IllegalStateException closed) {
                require(closed.getMessage().equals("the idmint client of counter 'c' is closed"), closed.getMessage());
            }
            release.countDown();
        }
        System.out.println("close ok");
    }

    /**
     * The background fetch started at 80% fails; the takers go on with the
     * rest of the buffer, untouched by that error, and the taker that then
     * needs values fetches again and gets them.
     */
    static void aFailedBackgroundFetchIsNotThrownAtALaterTaker() throws Exception {
        AtomicLong values = new AtomicLong(1);
        try (Peer peer = new Peer("flaky", (self, number) -> number == 2
                ? Peer.status(403, "{\"error\":\"forbidden\",\"message\":\"not now\"}")
                : Peer.run(values, 10))) {
            ValueClient client = ValueClient.builder().servers(peer.url).counter("c").batch(10).build();
            Watch watch = new Watch(0);
            client.hooks = watch;
            for (long expected = 1; expected <= 9; expected++) {
                require(client.next() == expected, "value " + expected + " of the first batch");
            }
            require(watch.nextLanding().equals("values"), "the first fetch");
            String background = watch.nextLanding();
            require(background.contains("403"), "the background fetch (the 9th value's) ended with " + background);
            require(client.next() == 10, "the last value of the first batch");
            long next = client.next();
            require(next == 11, "the taker after a failed background fetch got " + next + ", not 11");
            require(peer.requests() == 3, peer.requests() + " requests, not 3");
            client.close();
        }
        System.out.println("background failure ok");
    }

    /**
     * Two takers wait on a fetch that fails: both get its error. The next
     * call starts a fetch of its own and gets values.
     */
    static void aFailureReachesTheTakersOfThatFetchOnly() throws Exception {
        AtomicLong values = new AtomicLong(1);
        CountDownLatch release = new CountDownLatch(1);
        try (Peer peer = new Peer("failing", (self, number) -> {
            if (number == 1) {
                Peer.await(release, "the release of the held answer");
                return Peer.status(404, "{\"error\":\"unknown-counter\",\"message\":\"counter 'c' does not exist\"}");
            }
            return Peer.run(values, 10);
        })) {
            ValueClient client = ValueClient.builder().servers(peer.url).counter("c").batch(10).build();
            Watch watch = new Watch(2);
            client.hooks = watch;
            Set<Object> outcomes = ConcurrentHashMap.newKeySet();
            Thread first = taker("first", outcomes, client::next);
            Thread second = taker("second", outcomes, client::next);
            Peer.await(watch.waiting, "two takers waiting on the fetch");
            release.countDown();
            Peer.join(first, "the first taker");
            Peer.join(second, "the second taker");
            require(outcomes.size() == 2, "two takers, outcomes " + outcomes);
            for (Object outcome : outcomes) {
                require(outcome instanceof IdmintException failed && failed.status() == 404
                        && failed.body().contains("unknown-counter"), "a taker of the failed fetch got " + outcome);
            }
            long next = client.next();
            require(next == 1, "the call after a failed fetch got " + next);
            require(peer.requests() == 2, peer.requests() + " requests, not 2");
            client.close();
        }
        System.out.println("failure to its takers ok");
    }

    /**
     * A server that never answers: the taker's wait ends at the client's
     * deadline with an error naming the instance and why.
     */
    static void aStalledServerIsABoundedWaitAndANamedError() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        try (Peer peer = new Peer("silent", (self, number) -> {
            Peer.await(release, "the end of the stalled-server check");
            return Peer.status(500, "released");
        })) {
            ValueClient client = ValueClient.builder()
                    .servers(peer.url)
                    .counter("c")
                    .requestTimeout(Duration.ofMillis(100))
                    .deadline(Duration.ofMillis(300))
                    .backoff(Duration.ofMillis(10), Duration.ofMillis(20))
                    .build();
            Set<Object> outcomes = ConcurrentHashMap.newKeySet();
            Thread taker = taker("taker", outcomes, client::next);
            Peer.join(taker, "a taker on a server that never answers");
            Object outcome = outcomes.iterator().next();
            require(outcome instanceof IdmintException failed && failed.status() == 0
                    && failed.getMessage().contains("within 300 ms")
                    && failed.getMessage().contains(peer.url + " no answer within"),
                    "the taker on a silent server got " + outcome);
            release.countDown();
            client.close();
        }
        System.out.println("stalled server ok");
    }

    static void badSettingsAreRefusedByName() {
        String[][] cases = {
            {"none", "no server URL given"},
            {"ftp", "server URL ftp://idmint/ must start with http:// or https://"},
            {"twice", "server URL http://h:1/ is listed twice"},
            {"counter", "no counter given"},
            {"batch", "batch must be at least 1, not 0"},
            {"share", "prefetchShare must be more than 0 and at most 1, not 1.5"},
            {"deadline", "deadline must be a positive duration, not PT0S"},
            {"setAside", "setAside max (PT1S) must be at least its first (PT2S)"},
        };
        Set<String> seen = new TreeSet<>();
        for (String[] entry : cases) {
            ValueClient.Builder builder = ValueClient.builder().servers("http://h:1/").counter("c");
            switch (entry[0]) {
                case "none" -> builder.servers(new String[0]);
                case "ftp" -> builder.servers("ftp://idmint/");
                case "twice" -> builder.servers("http://h:1/", "http://user:s3cret@h:1");
                case "counter" -> builder.counter(null);
                case "batch" -> builder.batch(0);
                case "share" -> builder.prefetchShare(1.5);
                case "deadline" -> builder.deadline(Duration.ZERO);
                case "setAside" -> builder.setAside(Duration.ofSeconds(2), Duration.ofSeconds(1));
                default -> throw new IllegalStateException(entry[0]);
            }
            try {
                builder.build();
                require(false, entry[0] + ": the bad settings were accepted");
            } catch (IllegalArgumentException refused) {
                require(refused.getMessage().contains(entry[1]) && !refused.getMessage().contains("s3cret"),
                        entry[0] + ": " + refused.getMessage());
                seen.add(entry[0]);
            }
        }
        System.out.println("settings ok " + seen.size());
    }
}
