"""The soak's Python workload, SoakClient.java's twin: threads taking values
of a segment counter from a ValueClient and IDs of a cyclic counter from an
IdClient (clients/python), over every serve instance, until stdin closes.
Prints one line per call with the times it began and returned:
"V BEGAN ENDED VALUE", "I BEGAN ENDED ID", or "E BEGAN ENDED V|I MESSAGE" for a
call that raised. Arguments: segment counter, cyclic counter, its prefix,
threads per client, server URLs..."""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python", "src"))

from idmint_client import IdClient, IdmintError, ValueClient  # noqa: E402

PRINT = threading.Lock()


def say(line):
    with PRINT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def loop(take, letter, stopping):
    while not stopping.is_set():
        began = time.time()
        try:
            taken = take()
            say(f"{letter} {began} {time.time()} {taken}")
        except (IdmintError, RuntimeError) as error:
            message = str(error).replace("\n", " ")
            say(f"E {began} {time.time()} {letter} {message}")
        stopping.wait(0.04)


def main():
    segment, cyclic, prefix, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    servers = sys.argv[5:]
    values = ValueClient(servers, segment, batch=50)
    ids = IdClient(servers, cyclic, prefix=prefix, batch=20)
    stopping = threading.Event()
    # Each client has threads of its own: a wait for one client's next batch
    # is that path's alone, not the other's.
    for i in range(2 * threads):
        take, letter = (values.next, "V") if i % 2 == 0 else (ids.next, "I")
        threading.Thread(target=loop, args=(take, letter, stopping), daemon=True).start()
    sys.stdin.read()  # until stdin closes
    stopping.set()
    os._exit(0)


if __name__ == "__main__":
    main()
