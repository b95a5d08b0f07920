"""Ten tabs' sessions on one shared stream (`GET /api/events?session=…`) against the same
sessions on a stream each, on one server in the same run: the memory the open streams
take, and the server's CPU and the time to the last session for a publish that every
session is told of (`news`).

    python3 bench/shared-streams.py [--sessions 1000] [--rounds 5]

Runs the release build (REFRESH_SERVER overrides). Prints a Markdown table."""
import argparse
import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "chaos"))
from lib import EventStream, HTTPClient, Server, request  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--sessions", type=int, default=1000)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--per-stream", type=int, default=10)
options = parser.parse_args()


async def measure(shared):
    server = Server("--no-demo", "--max-sessions-per-client", "100000", "--max-streams-per-client", "100000",
                    "--max-sessions", "100000", "--max-streams", "100000").start()
    try:
        request(server, "POST", "/api/items", {"id": "first", "title": "First"})
        client = HTTPClient("127.0.0.1", server.port)
        ids = []
        for _ in range(options.sessions):
            status, body = await client.json("POST", "/api/sessions", {"firstPage": True})
            assert status == 201, body
            ids.append(body["id"])
        before = server.rss_kib()
        if shared:
            groups = [ids[start:start + options.per_stream] for start in range(0, len(ids), options.per_stream)]
            paths = ["/api/events?" + "&".join(f"session={id}" for id in group) for group in groups]
        else:
            paths = [f"/api/sessions/{id}/events" for id in ids]
        streams = [EventStream("127.0.0.1", server.port, path=path, compact=True) for path in paths]
        for start in range(0, len(streams), 200):
            await asyncio.gather(*(stream.open() for stream in streams[start:start + 200]))
        expected = options.sessions
        # Each stream's opening snapshots read, so the streams are at rest.
        await asyncio.gather(*(stream.read(until=lambda s: len(s.events) + s.states >= (options.per_stream if shared else 1), timeout=30)
                               for stream in streams))
        await asyncio.sleep(1)
        rest = server.rss_kib()
        cpu, last = [], []
        for round_number in range(options.rounds):
            counted = lambda stream: sum(1 for e in stream.events if e.get("event") == "news")
            before_news = [counted(stream) for stream in streams]
            started_cpu = server.cpu_seconds()
            started = time.monotonic()
            request(server, "POST", "/api/items", {"id": f"news-{round_number}", "title": f"News {round_number}"})
            per = options.per_stream if shared else 1
            await asyncio.gather(*(stream.read(until=lambda s, n=n: counted(s) >= n + per, timeout=60)
                                   for stream, n in zip(streams, before_news)))
            last.append(time.monotonic() - started)
            await asyncio.sleep(0.5)
            cpu.append(server.cpu_seconds() - started_cpu)
            told = sum(counted(stream) - n for stream, n in zip(streams, before_news))
            assert told == expected, f"{told} news events for {expected} sessions"
        for stream in streams:
            stream.close()
        client.close()
        return {"streams": len(streams), "memory_kib": (rest - before) / options.sessions,
                "cpu_ms": sorted(cpu)[len(cpu) // 2] * 1000, "last_ms": sorted(last)[len(last) // 2] * 1000}
    finally:
        server.stop()


async def main():
    own = await measure(shared=False)
    shared = await measure(shared=True)
    print(f"| {options.sessions} sessions | a stream each ({own['streams']} streams) | {options.per_stream} to a shared stream "
          f"({shared['streams']} streams) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for key, label, unit in (("memory_kib", "memory per session with its stream open", "KiB"),
                             ("cpu_ms", "server CPU for one publish told to every session (median)", "ms"),
                             ("last_ms", "time to the last session's news (median)", "ms")):
        print(f"| {label} | {own[key]:.2f} {unit} | {shared[key]:.2f} {unit} | {shared[key] / own[key]:.2f} |")


asyncio.run(main())
