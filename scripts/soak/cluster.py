"""The soak's own processes: the database server (under libfaketime's file
clock), the `idmint serve` instances and the fault proxies. Each runs in a
process group of its own, listed in OUT/pgids so that soak.sh can kill what
is left if this process itself dies."""

import glob
import os
import signal
import socket
import subprocess
import sys
import threading
import time

_registry_lock = threading.Lock()
_registry = []  # the processes this run started that may still be running
_pgid_file = None
_harness_errors = []


def harness_error(text):
    """Records that the harness itself went wrong (a driver thread died, a
    fault could not be injected, the database server could not be
    restarted): the run then proves nothing, and ends with exit 2."""
    with _registry_lock:
        _harness_errors.append(f"{time.time():.3f} {text}")


def harness_errors():
    with _registry_lock:
        return list(_harness_errors)


def open_fds():
    """How many file descriptors this process holds: the harness' own leak check."""
    return len(os.listdir("/proc/self/fd"))


def set_pgid_file(path):
    global _pgid_file
    _pgid_file = path


def spawn(args, stdout=None, stderr=None, env=None, stdin=subprocess.DEVNULL, cwd=None):
    """Starts a process in a session of its own and registers it."""
    process = subprocess.Popen(args, stdout=stdout, stderr=stderr, stdin=stdin, env=env,
                               cwd=cwd, start_new_session=True)
    with _registry_lock:
        # Forget the reaped ones: a Popen kept here keeps its pipes open, and a
        # 30-minute run spawns tens of thousands (a leak that once ran the
        # harness out of file descriptors).
        _registry[:] = [p for p in _registry if p.returncode is None]
        _registry.append(process)
        if _pgid_file:
            with open(_pgid_file, "a", encoding="utf-8") as file:
                file.write(f"{process.pid}\n")
    return process


def reap(process):
    """Waits for process and closes the pipes it had: its exit status."""
    returncode = process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            try:
                stream.close()
            except (OSError, ValueError):  # closed already, by a stop thread
                pass
    return returncode


def signal_group(process, sig):
    """Sends sig to the process's group; False if it is gone."""
    if process is None or process.poll() is not None:
        return False
    try:
        os.killpg(process.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_all():
    """SIGCONT then SIGKILL to every process group this run started."""
    with _registry_lock:
        processes = list(_registry)
    for process in processes:
        if process.poll() is None:
            signal_group(process, signal.SIGCONT)
            signal_group(process, signal.SIGKILL)
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_line(path, needle, process, timeout=60.0):
    """The first line of file `path` containing needle, once written; None if
    the process ends or the time runs out first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                for line in file:
                    if needle in line:
                        return line.strip()
        except FileNotFoundError:
            pass
        if process.poll() is not None:
            return None
        time.sleep(0.05)
    return None


def libfaketime():
    """libfaketime's thread-safe build where there is one: the server reads
    the clock file from many threads, and the plain build parses it into one
    static buffer, so a thread can read another's half-written copy, fail to
    parse it and exit the server (seen in a soak run)."""
    for name in ("libfaketimeMT.so.1", "libfaketime.so.1"):
        found = sorted(glob.glob(f"/usr/lib/*/faketime/{name}")) + \
            sorted(glob.glob(f"/usr/lib/faketime/{name}"))
        if found:
            return found[0]
    return None


class DbServer:
    """secantusd-rs on a data dir of the soak's own, every commit synced
    (durability is what is checked), its wall clock read at every call from
    a file (libfaketime) that the nemesis steps back and freezes. Two run:
    "db" (deployment eu of the spanning counter, and the only one of every
    other counter) and "db-us"; OUT/NAME-data, NAME.log and NAME-clock are
    each one's."""

    def __init__(self, binary, out, name="db"):
        self.binary = binary
        self.name = name
        self.data = os.path.join(out, f"{name}-data")
        self.log = os.path.join(out, f"{name}.log")
        self.clock_file = os.path.join(out, f"{name}-clock")
        self.port = 0
        self.process = None
        self.offset = 0  # seconds the server's clock is behind, never ahead
        self.lock = threading.Lock()  # the nemesis and the supervisor, one at a time
        self.exits = 0  # exits nobody asked for
        self.faketime = libfaketime()
        self.set_clock("+0")

    def set_clock(self, text):
        tmp = self.clock_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as file:
            file.write(text + "\n")
        os.replace(tmp, self.clock_file)

    def clock_env(self):
        """The environment that gives a process this server's faked wall
        clock (read from its clock file at every call; the monotonic clock
        left real): empty without libfaketime."""
        if not self.faketime:
            return {}
        return {"LD_PRELOAD": self.faketime, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                "FAKETIME_TIMESTAMP_FILE": self.clock_file, "FAKETIME_NO_CACHE": "1"}

    def start(self):
        env = dict(os.environ, **self.clock_env())
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"--- start at {time.time():.3f}\n")
            log.flush()
            mark = log.tell()
            self.process = spawn([self.binary, "--host", "127.0.0.1", "--port", str(self.port),
                                  "--storage-path", self.data, "--cache-size", "256M",
                                  "--log-file-max", "32MB", "--sync-on-commit"],
                                 stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with open(self.log, encoding="utf-8", errors="replace") as file:
                file.seek(mark)
                for line in file:
                    if "listening on " in line:
                        self.port = int(line.strip().rsplit(":", 1)[1])
                        return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"the database server {self.name} did not start; see {self.log}")

    def kill9(self):
        signal_group(self.process, signal.SIGKILL)
        if self.process:
            self.process.wait()

    def exited_unasked(self):
        """The server's exit status if it ended with nobody killing it."""
        return self.process.poll() if self.process is not None else None

    def restart(self):
        self.kill9()
        for _ in range(50):
            try:
                self.start()
                return
            except RuntimeError:
                time.sleep(0.2)  # the port may still be held for a moment
        raise RuntimeError(f"the database server {self.name} did not restart")

    def stop(self):
        return signal_group(self.process, signal.SIGSTOP)

    def cont(self):
        return signal_group(self.process, signal.SIGCONT)

    def clock_back(self, seconds):
        self.offset += seconds
        self.set_clock(f"-{self.offset}s")

    def freeze(self):
        """Freezes the clock at its reading now (whole seconds, UTC)."""
        frozen = time.gmtime(time.time() - self.offset)
        self.set_clock(time.strftime("%Y-%m-%d %H:%M:%S", frozen))
        return time.time()

    def thaw(self, frozen_at):
        """Goes on from where the frozen clock stands: never forward (a
        forward jump would end leases early, which no lease can survive)."""
        self.offset += int(time.time() - frozen_at) + 1
        self.set_clock(f"-{self.offset}s")

    def uri(self):
        return f"mongodb://127.0.0.1:{self.port}/"


class Proxy:
    """proxy.py in a process of its own, told what to do on its stdin."""

    def __init__(self, name, upstream_port, seed, out):
        self.name = name
        self.log = os.path.join(out, f"{name}.log")
        here = os.path.dirname(os.path.abspath(__file__))
        self.process = spawn([sys.executable, os.path.join(here, "proxy.py"), str(upstream_port),
                              str(seed)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=open(self.log, "w", encoding="utf-8"))
        line = self.process.stdout.readline().decode()
        if not line.startswith("listening on "):
            raise RuntimeError(f"proxy {name} did not start: {line!r}")
        self.port = int(line.split()[-1])

    def tell(self, command):
        try:
            self.process.stdin.write((command + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def uri(self):
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"


SERVE_POLICIES = ["--policy", "builtin:default", "--policy-for", "autoinc=builtin:decimal",
                  "--policy-for", "segment=builtin:decimal", "--policy-for",
                  "periodic=builtin:decimal", "--policy-for", "snowflake=builtin:base32"]


class Serve:
    """One `idmint serve` on fixed loopback ports, so that a restart is found
    again by its clients."""

    def __init__(self, index, idmint, uris, env, out, follow_db=False, extra=()):
        self.name = f"serve-{index}"
        self.extra = list(extra)  # more options (serve-3: the snowflake lease's TTL)
        # Following the database's active policy (swapped live): the cyclic
        # counter's IDs come in either format (the other kinds keep theirs).
        self.follow_db = follow_db
        self.idmint = idmint
        # One connection string, or several named ones (NAME=URI, the
        # preferred first): the deployments a spanning counter's lanes are in.
        self.uris = uris
        self.env = env
        self.port = free_port()
        self.admin = free_port()
        self.out = os.path.join(out, f"{self.name}.out")
        self.log = os.path.join(out, f"{self.name}.log")
        self.process = None
        self.generation = 0

    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        policies = SERVE_POLICIES + (["--policy-from-db"] if self.follow_db else [])
        uris = [arg for uri in self.uris for arg in ("--uri", uri)]
        open(self.out, "w").close()
        # A serve that follows the database reads its policies at start, and
        # exits if it cannot: a restart right after a database fault may need
        # a few tries, as a service manager would make them.
        for _ in range(10):
            self.process = spawn([self.idmint, "serve", "--listen", f"127.0.0.1:{self.port}",
                                  "--admin-listen", f"127.0.0.1:{self.admin}", *uris,
                                  "--shutdown-timeout", "5", "--server-timeout", "3",
                                  "--log-format", "json", *policies, *self.extra],
                                 stdout=open(self.out, "a", encoding="utf-8"),
                                 stderr=open(self.log, "a", encoding="utf-8"), env=self.env)
            if wait_for_line(self.out, "listening on ", self.process, timeout=60) is not None:
                self.generation += 1
                return
            reap(self.process)
            time.sleep(1.0)
        raise RuntimeError(f"{self.name} did not start; see {self.log}")

    def kill9(self):
        signal_group(self.process, signal.SIGKILL)
        if self.process:
            self.process.wait()

    def stop(self):
        return signal_group(self.process, signal.SIGSTOP)

    def cont(self):
        return signal_group(self.process, signal.SIGCONT)

    def shutdown(self):
        """SIGTERM, and how long it took to exit (None: killed after 20 s)."""
        if self.process is None or self.process.poll() is not None:
            return None
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
            return round(time.monotonic() - began, 3)
        except subprocess.TimeoutExpired:
            signal_group(self.process, signal.SIGKILL)
            return None
