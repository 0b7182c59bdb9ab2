package io.idmint.client;

import java.net.URI;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.function.LongFunction;

/**
 * Drives both clients against a running {@code idmint serve} and checks what
 * they hand out; run by {@code tests/serve.rs}. Arguments: the server's base
 * URL, a segment counter, a cyclic counter. Prints one line per check and
 * exits 1 on the first failure.
 */
public final class ClientCheck {
    public static void main(String[] args) throws Exception {
        URI base = URI.create(args[0]);

        // Values from runs, by 4 threads started at once: all distinct, and
        // each thread's increasing.
        ValueClient values = ValueClient.create(base, args[1], null, 10_000);
        Object[] perThread = inThreads(4, thread -> {
            long[] taken = new long[50_000];
            for (int i = 0; i < taken.length; i++) {
                taken[i] = values.next();
            }
            return taken;
        });
        Set<Long> seen = new HashSet<>();
        for (Object taken : perThread) {
            long[] run = (long[]) taken;
            for (int i = 0; i < run.length; i++) {
                require(seen.add(run[i]), "value " + run[i] + " handed out twice");
                require(i == 0 || run[i] > run[i - 1], "a thread's values went down at " + run[i]);
            }
        }
        System.out.println("values ok " + seen.size());

        // Formatted IDs in batches of 1000, by 2 threads: all distinct.
        IdClient ids = IdClient.create(base, args[2], "J-", null, 1000);
        Object[] idThreads = inThreads(2, thread -> {
            String[] taken = new String[2500];
            for (int i = 0; i < taken.length; i++) {
                taken[i] = ids.next();
            }
            return taken;
        });
        Set<String> idsSeen = new HashSet<>();
        for (Object taken : idThreads) {
            for (String id : (String[]) taken) {
                require(id.startsWith("J-"), "ID without the prefix: " + id);
                require(idsSeen.add(id), "ID handed out twice: " + id);
            }
        }
        System.out.println("ids ok " + idsSeen.size());

        // An unknown counter: the server's 404, naming it.
        try {
            ValueClient.create(base, "no-such-counter", null, 10).next();
            require(false, "an unknown counter gave a value");
        } catch (IdmintException error) {
            require(error.status() == 404 && error.body().contains("no-such-counter"), error.getMessage());
            System.out.println("error ok " + error.status());
        }
    }

    /** Runs {@code body} in {@code count} threads released at once; their results. */
    static Object[] inThreads(int count, LongFunction<Object> body) throws Exception {
        CyclicBarrier start = new CyclicBarrier(count);
        Object[] results = new Object[count];
        Throwable[] failures = new Throwable[count];
        Thread[] threads = new Thread[count];
        for (int t = 0; t < count; t++) {
            int index = t;
            threads[t] = new Thread(() -> {
                try {
                    start.await();
                    results[index] = body.apply(index);
                } catch (Throwable error) {
                    failures[index] = error;
                }
            });
            threads[t].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        for (Throwable failure : failures) {
            if (failure != null) {
                throw new IllegalStateException("a thread failed", failure);
            }
        }
        return results;
    }

    static void require(boolean condition, String message) {
        if (!condition) {
            System.out.println("FAILED: " + message);
            System.exit(1);
        }
    }
}
