import io.idmint.client.IdClient;
import io.idmint.client.IdmintException;
import io.idmint.client.ValueClient;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;

/**
 * The soak's Java workload: threads taking values of a segment counter from
 * a ValueClient and IDs of a cyclic counter from an IdClient, over every
 * serve instance, until stdin closes. Prints one line per call, with the
 * times it began and returned: "V BEGAN ENDED VALUE", "I BEGAN ENDED ID", or
 * "E BEGAN ENDED V|I MESSAGE" for a call that threw. Arguments: segment counter, cyclic counter, its prefix,
 * threads per client, server URLs...
 */
public final class SoakClient {
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        String[] servers = java.util.Arrays.copyOfRange(args, 4, args.length);
        ValueClient values = ValueClient.builder().servers(servers).counter(args[0]).batch(50).build();
        IdClient ids = IdClient.builder().servers(servers).counter(args[1]).prefix(args[2]).batch(20).build();
        int threads = Integer.parseInt(args[3]);
        // Each client has threads of its own: a wait for one client's next
        // batch is that path's alone, not the other's.
        for (int i = 0; i < 2 * threads; i++) {
            boolean value = i % 2 == 0;
            Thread thread = new Thread(() -> {
                while (true) {
                    double began = now();
                    try {
                        if (value) {
                            long v = values.next();
                            out.println("V " + began + " " + now() + " " + v);
                        } else {
                            String id = ids.next();
                            out.println("I " + began + " " + now() + " " + id);
                        }
                    } catch (IdmintException | IllegalStateException e) {
                        out.println("E " + began + " " + now() + " " + (value ? "V" : "I") + " "
                                + String.valueOf(e.getMessage()).replace('\n', ' '));
                    }
                    try {
                        Thread.sleep(40);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            thread.setDaemon(true);
            thread.start();
        }
        while (System.in.read() != -1) {
            // Runs until stdin closes.
        }
        System.exit(0);
    }

    private static double now() {
        return System.currentTimeMillis() / 1000.0;
    }
}
