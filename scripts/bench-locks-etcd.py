#!/usr/bin/env python3
"""`idmint lock run NAME -- true` beside `etcdctl lock NAME -- true`, as whole
commands, alternated run by run: the median wall time of each (a process
start, a connection, a durable acquire, the command, a durable release).

Both stores sync to disk before they answer: etcd with its defaults (a
single member on loopback, fsync per raft write), secantusd-rs with
`--sync-on-commit` (what idmint's `j: true` asks for). etcd comes from
Debian's packages (etcd-server, etcd-client); this script installs nothing.

    BENCH_BIN=target/release/idmint python3 scripts/bench-locks-etcd.py [RUNS]

IDMINT_TEST_SERVER_BIN names secantusd-rs (`. scripts/tools.sh;
ensure_server` sets it). Prints one line per command: median, min, max.
"""

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port, what):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not listen on {port}")


def timed(command, env):
    start = time.monotonic()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    idmint = os.environ.get("BENCH_BIN", "target/release/idmint")
    server = os.environ.get("IDMINT_TEST_SERVER_BIN")
    if not server or not shutil.which("etcd") or not shutil.which("etcdctl"):
        raise SystemExit("needs IDMINT_TEST_SERVER_BIN (scripts/tools.sh) and etcd, etcdctl "
                         "(Debian: etcd-server, etcd-client)")
    work = tempfile.mkdtemp(prefix="bench-locks-etcd-")
    mongo_port, etcd_port, peer_port = free_port(), free_port(), free_port()
    processes = [
        subprocess.Popen([server, "--port", str(mongo_port), "--storage-path",
                          os.path.join(work, "mongo"), "--sync-on-commit"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen(["etcd", "--data-dir", os.path.join(work, "etcd"),
                          "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                          "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                          "--listen-peer-urls", f"http://127.0.0.1:{peer_port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    try:
        wait_for(mongo_port, "secantusd-rs")
        wait_for(etcd_port, "etcd")
        env = dict(os.environ, ETCDCTL_API="3",
                   MONGODB_URI=f"mongodb://127.0.0.1:{mongo_port}/?directConnection=true")
        subprocess.run([idmint, "install"], env=env, check=True, stdout=subprocess.DEVNULL)
        commands = {
            "idmint lock run": [idmint, "lock", "run", "bench", "--", "true"],
            "etcdctl lock": ["etcdctl", f"--endpoints=127.0.0.1:{etcd_port}", "lock", "bench",
                             "--", "true"],
        }
        times = {name: [] for name in commands}
        for name, command in commands.items():
            timed(command, env)  # warm-up
        for _ in range(runs):
            for name, command in commands.items():
                times[name].append(timed(command, env))
        for name, samples in times.items():
            print(f"{name}: median {statistics.median(samples) * 1000:.1f} ms, "
                  f"min {min(samples) * 1000:.1f} ms, max {max(samples) * 1000:.1f} ms "
                  f"({len(samples)} runs)")
        ratio = statistics.median(times["idmint lock run"]) / statistics.median(times["etcdctl lock"])
        print(f"idmint / etcdctl: {ratio:.2f}")
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
