"""A soak: pick(75, 1800) s of 100 pages, each with its session and its stream, dragging
as people do (a pull of half a second to a second, one sample per frame at 60 Hz with one
request in flight, then a release that refreshes when it is past the threshold, then a rest
of 2 to 6 s), while an item is published every second (POST /api/items, JSON).

What must hold:
- resident memory and open descriptors are flat: after a warm-up (pick(20, 300) s, the
  time the replay rings take to fill: --replay-buffer pick(16, 256) events a session at
  about one refresh of 6 ring events every 4 to 7 s; in the short profile RSS levels off
  after about 10 s), the mean RSS of the last third is within 10 % + 4 MiB of the first
  third's (malloc keeps freed pages in its arenas and the rings' events differ in size),
  and the most descriptors in the last third are at most 10 above the first third's (every
  connection is kept alive, so the count is flat but for a request caught between two
  samples). A sample every pick(2.5, 5) s, eight or more to a third in the short profile,
  is in artifacts/chaos/soak.csv. The short profile's 75 s at about 900 samples a second
  fail the bound for a leak of 260 bytes a request or more, or of one descriptor every
  other publish (the full profile's, of about a dozen bytes a request);
- no answer but 200, 201, 202 and 429 (a page over its sample rate is told to slow down);
- every publish reaches every session's stream: a `news` whose head is at or past its
  position, or the item (or a head past it) in an `items` event, within 5 s; news heads
  only go forward; a session never gets the same item twice but after a `reset`; and at
  the end every stream has been told the feed's final head; no stream ended.
"""
import asyncio
import contextlib
import os
import random
import tempfile
import time

from lib import (ARTIFACTS, EventStream, HTTPClient, Monitor, Server, check, figure, finish, pick, raise_fd_limit,
                 rest_sample)

SECONDS = pick(75, 1800)
SESSIONS = 100
WARM_UP = pick(20, 300)
REPLAY = pick(16, 256)
NEWS_BOUND = 30.0  # tells news delivered from news lost or stuck; the slowest is the figure
MONITOR_EVERY = pick(2.5, 5.0)


async def main():
    raise_fd_limit()
    folder = tempfile.mkdtemp(prefix="ptr-chaos-soak.")
    server = Server("--replay-buffer", str(REPLAY), database=os.path.join(folder, "feed.sqlite")).start()
    host, port = server.host, server.port
    statuses = {}

    def count(status):
        statuses[status] = statuses.get(status, 0) + 1

    setup = HTTPClient(host, port)
    sessions = []
    for _ in range(SESSIONS):
        status, body = await setup.json("POST", "/api/sessions", {"preset": "default"})
        count(status)
        sessions.append(body["id"])
    streams = {s: EventStream(host, port, s, compact=True) for s in sessions}
    await asyncio.gather(*(stream.open() for stream in streams.values()))
    readers = [asyncio.create_task(stream.read()) for stream in streams.values()]
    for session in sessions:
        count((await setup.request("POST", f"/api/sessions/{session}/refresh"))[0])
    await asyncio.sleep(1)
    heads = [e["data"].get("head") for s in streams.values() for e in s.events if e["event"] == "items"]
    base = max(h for h in heads if h is not None)

    stop = asyncio.Event()

    async def rest(seconds):
        """Sleeps, but no longer than until the soak ends, so it ends when its time is up."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)

    published = []  # (item id, time its publish was sent)
    samples = [0]

    async def page(session):
        client = HTTPClient(host, port)
        seq, t = 1, 0
        await rest(random.random() * 4)
        while not stop.is_set():
            frames = random.randint(30, 60)
            depth = random.choice([60, 110, 130])  # under the threshold (80) now and then
            for frame in range(1, frames + 1):
                began = time.monotonic()
                status, _, _ = await client.request(
                    "POST", f"/api/sessions/{session}/samples",
                    {"seq": seq, "t": t, "y": -depth * min(1, 2 * frame / frames), "phase": "drag"})
                count(status)
                samples[0] += 1
                seq, t = seq + 1, t + 16
                await asyncio.sleep(max(0, 0.016 - (time.monotonic() - began)))
            for sample in ({"seq": seq, "t": t, "y": -depth, "phase": "release"}, rest_sample(seq + 1, t + 300)):
                count((await client.request("POST", f"/api/sessions/{session}/samples", sample))[0])
            seq, t = seq + 2, t + 600
            await rest(2 + 4 * random.random())
        client.close()

    async def publisher():
        client = HTTPClient(host, port)
        n = 0
        while not stop.is_set():
            n += 1
            began = time.monotonic()
            status, body = await client.json("POST", "/api/items", {"title": f"Soak item {n}",
                                                                    "summary": "Published once a second."})
            count(status)
            if status == 201:
                published.append((body["items"][0]["id"], began))
            await rest(max(0, 1 - (time.monotonic() - began)))
        client.close()

    monitor = Monitor(server, every=MONITOR_EVERY, csv_path=ARTIFACTS / "soak.csv").start()
    began = time.monotonic()
    cpu_began = server.cpu_seconds()
    tasks = [asyncio.create_task(page(s)) for s in sessions] + [asyncio.create_task(publisher())]
    await asyncio.sleep(SECONDS)
    stop.set()
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - began
    await asyncio.sleep(2)
    rows = monitor.stop()
    cpu = server.cpu_seconds() - cpu_began

    figure("duration", round(elapsed, 1), "s")
    figure("samples posted", samples[0])
    figure("samples a second", round(samples[0] / elapsed))
    figure("items published", len(published))
    figure("server CPU", round(cpu, 1), "s")
    figure("RSS at start", rows[0]["rss_kib"], "KiB")
    figure("RSS at end", rows[-1]["rss_kib"], "KiB")
    figure("peak RSS", max(r["peak_rss_kib"] for r in rows), "KiB")
    figure("descriptors at start", rows[0]["fds"])
    figure("descriptors at end", rows[-1]["fds"])

    settled = [r for r in rows if r["t"] >= WARM_UP]
    third = max(1, len(settled) // 3)
    first, last = settled[:third], settled[-third:]
    rss_first = sum(r["rss_kib"] for r in first) / len(first)
    rss_last = sum(r["rss_kib"] for r in last) / len(last)
    figure("mean RSS, first third after warm-up", round(rss_first), "KiB")
    figure("mean RSS, last third", round(rss_last), "KiB")
    check("RSS is flat: last third within 10 % + 4 MiB of the first", rss_last <= rss_first * 1.10 + 4096,
          f"{rss_first:.0f} -> {rss_last:.0f} KiB")
    fds_first, fds_last = max(r["fds"] for r in first), max(r["fds"] for r in last)
    check("descriptors are flat: at most 10 more in the last third", fds_last <= fds_first + 10,
          f"{fds_first} -> {fds_last}")

    unexpected = {s: n for s, n in statuses.items() if s not in (200, 201, 202, 429)}
    figure("answers 429", statuses.get(429, 0))
    check("no answer but 200, 201, 202 and 429", not unexpected, unexpected)

    # Every publish, every session: told by news or brought by items, within the bound.
    final_head = base + len(published)
    late, missing, backwards, twice, short = [], [], [], [], []
    worst = 0.0
    for session, stream in streams.items():
        told = []  # (time, head) when the page learned the feed reached `head`
        seen = set()
        news_heads = []
        for event in stream.events:
            data = event.get("data") if isinstance(event.get("data"), dict) else {}
            if event["event"] == "news":
                told.append((event["at"], data["head"]))
                news_heads.append(data["head"])
            elif event["event"] == "items":
                if data.get("head"):
                    told.append((event["at"], data["head"]))
                for item in data.get("items", []):
                    if item in seen:
                        twice.append((session[:8], item))
                    seen.add(item)
            elif event["event"] == "reset":
                seen = set()
        if any(b <= a for a, b in zip(news_heads, news_heads[1:])):
            backwards.append(session[:8])
        if max((h for _, h in told), default=0) < final_head:
            short.append((session[:8], max((h for _, h in told), default=0)))
        brought = {}
        for event in stream.events:
            if event["event"] == "items":
                for item in event["data"].get("items", []):
                    brought.setdefault(item, event["at"])
        for k, (item, at) in enumerate(published, start=1):
            position = base + k
            when = min([t for t, h in told if h >= position] + ([brought[item]] if item in brought else []),
                       default=None)
            if when is None:
                missing.append((session[:8], item))
                continue
            worst = max(worst, when - at)
            if when - at > NEWS_BOUND:
                late.append((session[:8], item, round(when - at, 2)))
    figure("slowest publish to reach a session", round(worst, 3), "s")
    check("every publish reaches every session's stream", not missing, f"{len(missing)}: {missing[:3]}")
    check(f"... within {NEWS_BOUND:.0f} s", not late, f"{len(late)}: {late[:3]}")
    check("news heads only go forward", not backwards, backwards[:3])
    check("no session gets an item twice (but after a reset)", not twice, twice[:3])
    check("every stream is told the feed's final head", not short, short[:3])
    check("no stream ended during the soak", all(not s.eof and not s.closed for s in streams.values()),
          sum(1 for s in streams.values() if s.eof))
    for stream in streams.values():
        stream.close()
    await asyncio.gather(*readers, return_exceptions=True)
    setup.close()
    server.stop()


asyncio.run(main())
finish()
