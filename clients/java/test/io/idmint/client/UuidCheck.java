package io.idmint.client;

import java.net.URI;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;

import static io.idmint.client.ClientCheck.inThreads;
import static io.idmint.client.ClientCheck.require;

/**
 * Takes UUIDs with {@link IdClient#nextUuid()} from a running {@code idmint
 * serve} that formats a snowflake counter with {@code builtin:uuidv7}, and
 * checks them; run by {@code tests/java_client.rs}. Arguments: the server's
 * base URL, the snowflake counter, a counter whose IDs are not UUIDs. Prints
 * one line per check and exits 1 on the first failure.
 */
public final class UuidCheck {
    public static void main(String[] args) throws Exception {
        URI base = URI.create(args[0]);

        // 2 threads started at once, batches of 500: all distinct, version
        // 7 and RFC 9562's variant, made within the run (the first 48 bits
        // are Unix milliseconds), each thread's increasing.
        long start = System.currentTimeMillis();
        IdClient ids = IdClient.create(base, args[1], null, null, 500);
        Object[] perThread = inThreads(2, thread -> {
            UUID[] taken = new UUID[3000];
            for (int i = 0; i < taken.length; i++) {
                taken[i] = ids.nextUuid();
            }
            return taken;
        });
        long end = System.currentTimeMillis();
        Set<UUID> seen = new HashSet<>();
        for (Object taken : perThread) {
            UUID[] run = (UUID[]) taken;
            for (int i = 0; i < run.length; i++) {
                UUID id = run[i];
                require(seen.add(id), "UUID " + id + " handed out twice");
                require(id.version() == 7, "not version 7: " + id);
                require(id.variant() == 2, "not RFC 9562's variant: " + id);
                long millis = id.getMostSignificantBits() >>> 16;
                require(millis >= start - 1 && millis <= end, "made outside the run: " + id);
                require(i == 0 || id.compareTo(run[i - 1]) > 0, "a thread's UUIDs went down at " + id);
            }
        }
        System.out.println("uuids ok " + seen.size());

        // A counter whose IDs are not UUIDs: refused by name, not parsed.
        try {
            IdClient.create(base, args[2], null, null, 10).nextUuid();
            require(false, "an ID that is not a UUID was returned as one");
        } catch (IdmintException error) {
            require(error.getMessage().contains("is not a UUID"), error.getMessage());
            System.out.println("not a uuid ok");
        }
    }
}
