package io.idmint.client;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

import static io.idmint.client.ClientCheck.inThreads;
import static io.idmint.client.ClientCheck.require;

/**
 * Reserves, confirms and voids numbers of a gap-free series through
 * {@link SeriesClient}, against running {@code idmint serve} instances the
 * first of which is down (every call fails over); run by
 * {@code tests/java_client.rs}, which audits the series after. Arguments:
 * the series, then the instances' base URLs. Prints one line per check and
 * exits 1 on the first failure.
 */
public final class SeriesCheck {
    public static void main(String[] args) throws Exception {
        String[] urls = java.util.Arrays.copyOfRange(args, 1, args.length);
        try (SeriesClient series = SeriesClient.builder().servers(urls).series(args[0]).build()) {
            // A reserve asked again with its key answers the same number.
            SeriesClient.Reservation first = series.reserve(Duration.ofMinutes(5), "order-1");
            SeriesClient.Reservation again = series.reserve(Duration.ofMinutes(5), "order-1");
            require(first.number() == 1 && !first.reused() && first.state().equals("reserved"), "first: " + first);
            require(again.number() == 1 && again.reused() && again.deadline().equals(first.deadline()), "again: " + again);
            System.out.println("reserve ok " + first.number());

            SeriesClient.Settled confirmed = series.confirm(first, "INV-1 \"quoted\"");
            SeriesClient.Settled repeated = series.confirm(first, "INV-1 \"quoted\"");
            require(confirmed.state().equals("confirmed") && !confirmed.already(), "confirmed: " + confirmed);
            require(repeated.already() && repeated.reference().equals("INV-1 \"quoted\""), "repeated: " + repeated);
            System.out.println("confirm ok");
            try {
                series.confirm(first, "INV-9");
                require(false, "a confirmed number was confirmed with another reference");
            } catch (IdmintException error) {
                require(error.status() == 409 && error.body().contains("\"settled\""), error.getMessage());
                System.out.println("refused ok " + error.status());
            }

            SeriesClient.Reservation cancelled = series.reserve(Duration.ofMinutes(5));
            SeriesClient.Settled voided = series.voidNumber(cancelled, "order cancelled");
            require(voided.state().equals("voided") && voided.reason().equals("order cancelled"), "voided: " + voided);
            System.out.println("void ok " + cancelled.number());

            // Four threads at once, ten numbers each: all distinct.
            Object[] taken = inThreads(4, thread -> {
                long[] numbers = new long[10];
                for (int i = 0; i < numbers.length; i++) {
                    SeriesClient.Reservation number = series.reserve(Duration.ofMinutes(5));
                    series.confirm(number, "INV-t" + thread + "-" + i);
                    numbers[i] = number.number();
                }
                return numbers;
            });
            Set<Long> seen = new HashSet<>();
            for (Object numbers : taken) {
                for (long number : (long[]) numbers) {
                    require(seen.add(number), "number " + number + " reserved twice");
                }
            }
            System.out.println("threads ok " + seen.size());
            // The instance that is down was asked, failed, and was failed over.
            long[][] health = series.health();
            require(health[0][0] == 0 && health[0][1] >= 1 && health[1][0] >= 55,
                    "health: " + java.util.Arrays.deepToString(health));
            System.out.println("failover ok");
        }
    }
}
