package io.idmint.client;

import static io.idmint.client.ClientCheck.require;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Takes values from several real {@code idmint serve} instances in many
 * threads while the test that runs it kills one and restarts it; run by
 * {@code tests/java_client.rs}. Arguments: counter, threads, values per
 * thread and phase, batch, then the instances' base URLs.
 *
 * <p>Three phases, the threads joined between them so that the test acts
 * at a known point: (1) every thread takes its values, then the program
 * prints {@code paused 1} and waits for {@code go} on stdin (the test kills
 * an instance meanwhile); (2) the threads take values until the client has
 * seen an instance fail and each took its share, then {@code paused 2} and
 * {@code go} (the test restarts the instance on its port); (3) the threads
 * take values until every instance, the restarted one included, has
 * answered a fetch in this phase. Then it checks that no value came twice
 * and no call failed, and prints {@code values ok N}, {@code max M} and
 * {@code failures F}.
 */
public final class FailoverRun {
    public static void main(String[] args) throws Exception {
        RunArgs run = RunArgs.parse(args);
        String counter = run.counter();
        int threads = run.threads();
        int perPhase = run.perPhase();
        long batch = run.batch();
        String[] servers = run.servers();
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (ValueClient client = ValueClient.builder()
                .servers(servers)
                .counter(counter)
                .batch(batch)
                // Short set-asides, so that the restarted instance is asked again soon.
                .setAside(Duration.ofMillis(100), Duration.ofSeconds(1))
                .build()) {
            Values[] taken = new Values[threads];
            for (int t = 0; t < threads; t++) {
                taken[t] = new Values();
            }

            phase(client, taken, perPhase, () -> true);
            pause(commands, 1);

            phase(client, taken, perPhase, () -> total(client, 1) > 0);
            pause(commands, 2);

            long[] before = column(client, 0);
            phase(client, taken, perPhase, () -> {
                long[] now = column(client, 0);
                for (int i = 0; i < now.length; i++) {
                    if (now[i] == before[i]) {
                        return false;
                    }
                }
                return true;
            });

            Set<Long> seen = new HashSet<>();
            long max = 0;
            for (Values values : taken) {
                for (int i = 0; i < values.size; i++) {
                    require(seen.add(values.items[i]), "value " + values.items[i] + " handed out twice");
                    max = Math.max(max, values.items[i]);
                }
            }
            System.out.println("values ok " + seen.size());
            System.out.println("max " + max);
            System.out.println("failures " + total(client, 1));
        }
    }

    /**
     * The arguments of a run with pauses: counter, threads, values per
     * thread and phase, batch, then the instances' base URLs.
     */
    record RunArgs(String counter, int threads, int perPhase, long batch, String[] servers) {
        static RunArgs parse(String[] args) {
            return new RunArgs(args[0], Integer.parseInt(args[1]), Integer.parseInt(args[2]),
                    Long.parseLong(args[3]), Arrays.copyOfRange(args, 4, args.length));
        }
    }

    /** Every thread takes at least {@code count} values, and goes on until {@code done}. */
    private static void phase(ValueClient client, Values[] taken, int count, BooleanSupplier done) throws Exception {
        long start = System.nanoTime();
        ClientCheck.inThreads(taken.length, index -> {
            Values values = taken[(int) index];
            for (int i = 0; i < count || !done.getAsBoolean(); i++) {
                values.add(client.next()); // an exception here fails the run
                // What ends the phase is an event (a failure seen, an instance back):
                // fail, rather than hang, if it never comes.
                if (i >= count && (i & 1023) == 0) {
                    require(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(Peer.EVENT_SECONDS),
                            "the phase's event did not happen within " + Peer.EVENT_SECONDS + " s: health "
                                    + Arrays.deepToString(client.servers().health()));
                }
            }
            return null;
        });
    }

    static void pause(BufferedReader commands, int number) throws Exception {
        System.out.println("paused " + number);
        System.out.flush();
        String command = commands.readLine();
        require("go".equals(command), "expected go on stdin, not " + command);
    }

    /** A column of the client's health: 0 answers, 1 failures; per instance. */
    private static long[] column(ValueClient client, int column) {
        long[][] health = client.servers().health();
        long[] values = new long[health.length];
        for (int i = 0; i < health.length; i++) {
            values[i] = health[i][column];
        }
        return values;
    }

    private static long total(ValueClient client, int column) {
        return Arrays.stream(column(client, column)).sum();
    }

    /** A growable array of one thread's values. */
    private static final class Values {
        long[] items = new long[1024];
        int size;

        void add(long value) {
            if (size == items.length) {
                items = Arrays.copyOf(items, size * 2);
            }
            items[size++] = value;
        }
    }
}
