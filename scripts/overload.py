#!/usr/bin/env python3
"""More clients that pipeline requests and never read than `idmint serve`'s
--max-connections, and one client that reads: the share of its requests
answered (200) within --within seconds, for docs/BENCHMARKS.md.

    scripts/overload.py --address 127.0.0.1:8080 --stalled 700 --seconds 15

Each stalled client connects once, writes `GET /healthz` requests until its
writes block (its window full: it never reads), and holds on. The reading
client asks `GET /healthz` on a new connection each time, one after another,
each given --within seconds. Prints one JSON object.
"""

import argparse
import asyncio
import json
import time

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: idmint\r\n\r\n"


async def stalled(host, port, held):
    try:
        reader, writer = await asyncio.open_connection(host, port, limit=4096)
    except OSError:
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        import socket
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    held.append(writer)
    try:
        while True:
            writer.write(REQUEST * 64)
            await writer.drain()
    except (OSError, ConnectionError):
        pass


async def one_request(host, port, within):
    async def ask():
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: idmint\r\nConnection: close\r\n\r\n")
        await writer.drain()
        head = await reader.readline()
        writer.close()
        return head.startswith(b"HTTP/1.1 200")
    try:
        return await asyncio.wait_for(ask(), within)
    except (asyncio.TimeoutError, OSError, ConnectionError):
        return False


async def main(args):
    host, port = args.address.rsplit(":", 1)
    port = int(port)
    held = []
    tasks = [asyncio.create_task(stalled(host, port, held)) for _ in range(args.stalled)]
    await asyncio.sleep(args.settle)
    answered = asked = 0
    latencies = []
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        ok = await one_request(host, port, args.within)
        asked += 1
        if ok:
            answered += 1
            latencies.append(time.monotonic() - started)
    for task in tasks:
        task.cancel()
    latencies.sort()
    print(json.dumps({
        "stalled_clients": args.stalled, "seconds": args.seconds, "asked": asked,
        "answered_within": args.within, "answered": answered,
        "share": round(answered / asked, 3) if asked else 0.0,
        "median_ms": round(1000 * latencies[len(latencies) // 2], 1) if latencies else None,
    }))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--stalled", type=int, default=700)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--within", type=float, default=2.0)
    parser.add_argument("--settle", type=float, default=2.0,
                        help="seconds for the stalled clients to fill their windows first")
    asyncio.run(main(parser.parse_args()))
