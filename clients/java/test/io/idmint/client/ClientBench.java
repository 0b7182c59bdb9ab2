package io.idmint.client;

import java.net.URI;

/**
 * How many values per second a {@link ValueClient} hands out in-process once
 * warm: {@code threads} threads take values for {@code seconds} seconds
 * after a warm-up; prints one JSON line. Arguments: base URL, an autoinc or
 * segment counter, threads, seconds, batch. Run by
 * {@code scripts/bench-serve.sh}.
 */
public final class ClientBench {
    public static void main(String[] args) throws Exception {
        URI base = URI.create(args[0]);
        String counter = args[1];
        int threads = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        long batch = Long.parseLong(args[4]);
        ValueClient client = ValueClient.create(base, counter, null, batch);
        run(client, threads, 1.0); // warm-up: JIT, connections, the server's segment step
        long[] counts = run(client, threads, seconds);
        long total = 0;
        for (long count : counts) {
            total += count;
        }
        System.out.printf("{\"mode\":\"java_client\",\"threads\":%d,\"batch\":%d,\"seconds\":%.1f,\"values\":%d,\"values_per_sec\":%.0f}%n",
                threads, batch, seconds, total, total / seconds);
    }

    static long[] run(ValueClient client, int threads, double seconds) throws Exception {
        long[] counts = new long[threads];
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long[] sink = new long[threads];
        Object[] unused = ClientCheck.inThreads(threads, index -> {
            int t = (int) index;
            long count = 0;
            long last = 0;
            while ((count & 1023) != 0 || System.nanoTime() < end) {
                last = client.next();
                count++;
            }
            counts[t] = count;
            sink[t] = last;
            return null;
        });
        return counts;
    }
}
