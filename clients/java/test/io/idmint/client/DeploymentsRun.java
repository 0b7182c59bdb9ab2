package io.idmint.client;

import static io.idmint.client.ClientCheck.require;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Takes IDs of a counter striped across database deployments, through
 * {@code idmint serve} instances that span them, in many threads while the
 * test that runs it kills one deployment's server and restarts it; run by
 * {@code tests/java_client.rs}. Arguments: counter, threads, IDs per thread
 * and phase, batch, then the instances' base URLs.
 *
 * <p>Three phases, the threads joined between them so that the test acts
 * at a known point: every thread takes its IDs, then the program prints
 * {@code paused N} and waits for {@code go} on stdin (after phase 1 the test
 * kills a deployment's server, after phase 2 it restarts it). No call may
 * fail: the instances fail over between deployments themselves. Then it
 * checks that no ID came twice and prints {@code ids ok N}.
 */
public final class DeploymentsRun {
    public static void main(String[] args) throws Exception {
        FailoverRun.RunArgs run = FailoverRun.RunArgs.parse(args);
        int threads = run.threads();
        int perPhase = run.perPhase();
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<List<String>> taken = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            taken.add(new ArrayList<>());
        }
        try (IdClient client = IdClient.builder()
                .servers(run.servers())
                .counter(run.counter())
                .batch(run.batch())
                .build()) {
            for (int phase = 1; phase <= 3; phase++) {
                ClientCheck.inThreads(threads, index -> {
                    List<String> ids = taken.get((int) index);
                    for (int i = 0; i < perPhase; i++) {
                        ids.add(client.next()); // an exception here fails the run
                    }
                    return null;
                });
                if (phase < 3) {
                    FailoverRun.pause(commands, phase);
                }
            }
        }
        Set<String> seen = new HashSet<>();
        for (List<String> ids : taken) {
            for (String id : ids) {
                require(seen.add(id), "ID " + id + " handed out twice");
            }
        }
        System.out.println("ids ok " + seen.size());
    }
}
