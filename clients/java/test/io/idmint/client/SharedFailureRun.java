package io.idmint.client;

import java.time.Duration;
import java.util.Arrays;

/**
 * Takes one formatted ID from several real {@code idmint serve} instances
 * whose policy fails on the values of the first fetch; run by
 * {@code tests/java_client.rs}. Arguments: counter, batch, then the
 * instances' base URLs. The deadline is a minute, so that a failure that
 * came at once is told apart from one that waited for it. Prints
 * {@code failed STATUS MILLIS} with the error's status and how long the
 * call took, or {@code got ID} when the call gave an ID.
 */
public final class SharedFailureRun {
    public static void main(String[] args) {
        String counter = args[0];
        int batch = Integer.parseInt(args[1]);
        String[] servers = Arrays.copyOfRange(args, 2, args.length);
        try (IdClient client = IdClient.builder()
                .servers(servers)
                .counter(counter)
                .batch(batch)
                .deadline(Duration.ofSeconds(60))
                .build()) {
            long start = System.nanoTime();
            try {
                System.out.println("got " + client.next());
            } catch (IdmintException failed) {
                long millis = Duration.ofNanos(System.nanoTime() - start).toMillis();
                System.out.println("failed " + failed.status() + " " + millis);
                System.out.println(failed.body());
            }
        }
    }
}
