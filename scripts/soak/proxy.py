"""A TCP proxy between clients and the database server, for the nemesis.

    python3 proxy.py UPSTREAM_PORT SEED

Prints "listening on PORT", then obeys lines on stdin:

- "partition on": nothing is forwarded either way and nothing is closed:
  bytes wait in the kernel's buffers, as in a network partition; new
  connections are accepted and wait too. "partition off" forwards again.
- "cut on": each answer chunk from the server is, with probability one half,
  forwarded in part (a seeded random length) and then both sockets of its
  connection are shut: the request was applied, its answer is lost midway.
  "cut off" stops cutting.

It exits when stdin closes.
"""

import asyncio
import random
import sys


class Proxy:
    def __init__(self, upstream_port, seed):
        self.upstream_port = upstream_port
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.cutting = False
        self.rng = random.Random(seed)
        self.cuts = 0

    async def pump(self, reader, writer, other_writer, answers):
        try:
            while True:
                await self.flowing.wait()
                data = await reader.read(65536)
                if not data:
                    break
                await self.flowing.wait()
                if answers and self.cutting and self.rng.random() < 0.5:
                    part = self.rng.randrange(0, len(data))
                    writer.write(data[:part])
                    await writer.drain()
                    self.cuts += 1
                    print(f"cut after {part} of {len(data)} bytes", file=sys.stderr, flush=True)
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for w in (writer, other_writer):
                try:
                    w.close()
                except Exception:  # noqa: BLE001 - closing what may be closed
                    pass

    async def handle(self, client_reader, client_writer):
        await self.flowing.wait()
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1",
                                                                         self.upstream_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            self.pump(client_reader, server_writer, client_writer, answers=False),
            self.pump(server_reader, client_writer, server_writer, answers=True))

    async def control(self):
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            command = line.strip()
            print(f"command: {command}", file=sys.stderr, flush=True)
            if command == "partition on":
                self.flowing.clear()
            elif command == "partition off":
                self.flowing.set()
            elif command == "cut on":
                self.cutting = True
            elif command == "cut off":
                self.cutting = False

    async def main(self):
        server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(f"listening on {port}", flush=True)
        async with server:
            await self.control()


if __name__ == "__main__":
    asyncio.run(Proxy(int(sys.argv[1]), int(sys.argv[2])).main())
