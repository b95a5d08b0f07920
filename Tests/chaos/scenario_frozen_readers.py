"""Readers that stop reading: pick(500, 2000) event streams whose clients never read (a
4 KiB receive buffer) while their sessions drag, refresh and hear news for pick(20, 60) s.

What must hold:
- the server's resident memory stays under a bound worked out from what it must keep:
  the memory it had with every stream open, plus the replay rings (each session keeps at
  most --replay-buffer non-`state` events; their bytes are measured from a reader that
  never stopped, and counted thrice for the allocator), plus per stopped stream what NIO
  buffers once the socket is full (its 64 KiB high-water mark, and the write that crossed
  it: at most a wake-up's events, counted as twice the largest event), plus 64 MiB for
  threads and arenas. The scenario checks the bound is not vacuous: each stopped reader was
  sent more than that allowance, so a server that queued it all would break it. Catching
  up, a stream is handed everything after its place in one write, at most its session's
  ring: the bound while they catch up has the largest ring per stream instead. The curve,
  every second, is artifacts/chaos/frozen-rss.csv;
- when they read again, each gets every `progress`, `items` and `done` that a reader that
  never stopped got (a witness per session), in order, once; no `reset` for a gap (a
  refresh that brings more than a page sends `reset` to every stream, the witness's too,
  and it is compared like the rest); ids increasing;
  per action the fraction never goes back and `done` comes last. Superseded `state` and
  `news` may be coalesced (the SPEC allows it), so they are not compared, but the final
  state is.

The freeze is shorter than --send-timeout (set to 300 s here), so the server keeps the
streams, and --replay-buffer is 1024: a session refreshes at most every 1.3 s (a pull, then
0.8 to 1.8 s of rest) with 6 ring events each, under 300 in 60 s, so the ring holds the
whole freeze and a `reset` would be a fault. A second, small part runs with --send-timeout
2 (and a 8 KiB send buffer, so the socket fills at once): the server drops the stopped
streams, and each reconnects with `Last-Event-ID` and must still get everything (10 s of
activity is under 60 ring events, inside the default buffer of 256).
"""
import asyncio
import random
import time

from lib import (ARTIFACTS, EventStream, HTTPClient, Monitor, Server, action_order_problems, check, figure, finish,
                 pick, pull_samples, raise_fd_limit, replayable, rest_sample)

FROZEN = pick(500, 2000)
PER_SESSION = 10
SESSIONS = FROZEN // PER_SESSION
FREEZE = pick(20, 60)
SUMMARY = pick(4500, 1500)  # bytes of each published item's summary (the server takes 5000)
HIGH_WATER = 64 * 1024


def bytes_of(event):
    return event["bytes"]


def gap_resets(events):
    """`reset`s for a gap in the replay (not the `list_replaced` one a big refresh sends)."""
    return [e for e in events if e.get("event") == "reset" and "missed" in str(e.get("data"))]


async def activity(host, port, sessions, stop, refused, publish_every=1.0, items_per_publish=4, summary=SUMMARY):
    """Every session pulls and releases every 1.5 to 2.5 s (a refresh each time); items are
    published every second, fewer than a refresh sends (20) between two refreshes."""

    async def drive(session):
        client = HTTPClient(host, port)
        seq, t = 1, 0
        await asyncio.sleep(random.random() * 2)
        while not stop.is_set():
            gesture, seq, t = pull_samples(seq, t, frames=16)
            for i in range(0, len(gesture), 3):
                await client.request("POST", f"/api/sessions/{session}/samples", {"samples": gesture[i:i + 3]})
                await asyncio.sleep(0.03)
            await asyncio.sleep(0.3)
            await client.request("POST", f"/api/sessions/{session}/samples", rest_sample(seq, t))
            seq, t = seq + 1, t + 400
            await asyncio.sleep(0.8 + random.random())
        client.close()

    async def publish():
        client = HTTPClient(host, port)
        n = 0
        while not stop.is_set():
            batch = []
            for _ in range(items_per_publish):
                n += 1
                batch.append({"title": f"Frozen-reader item {n}", "summary": "word " * (summary // 5)})
            status, _, body = await client.request("POST", "/api/items", {"items": batch})
            if status != 201:
                refused.append((status, body[:200]))
            await asyncio.sleep(publish_every)
        client.close()

    await asyncio.gather(publish(), *(drive(s) for s in sessions))


def compare(frozen, witness, start):
    mine = [(e["id"], e["event"], repr(e["data"])) for e in replayable(frozen) if e["id"] > start]
    theirs = [(e["id"], e["event"], repr(e["data"])) for e in replayable(witness) if e["id"] > start]
    if mine == theirs:
        return None
    missing = [e[:2] for e in theirs if e not in mine]
    extra = [e[:2] for e in mine if e not in theirs]
    return f"{len(missing)} missing {missing[:3]}, {len(extra)} extra {extra[:3]}, order same: {sorted(mine) == mine}"


async def open_all(host, port, sessions, per_session, rcvbuf):
    frozen, witnesses = [], {}
    for session in sessions:
        witnesses[session] = EventStream(host, port, session, compact=True)
        for _ in range(per_session):
            frozen.append(EventStream(host, port, session, rcvbuf=rcvbuf, compact=True))
    await asyncio.gather(*(s.open() for s in frozen + list(witnesses.values())))
    return frozen, witnesses


async def create_sessions(client, count):
    sessions = []
    for _ in range(count):
        status, body = await client.json("POST", "/api/sessions", {"preset": "default"})
        assert status == 201, (status, body)
        sessions.append(body["id"])
    return sessions


async def main():
    raise_fd_limit()
    # ---------------------------------------------------------------- the freeze
    server = Server("--max-streams-per-client", "100000", "--max-sessions-per-client", "100000",
                    "--send-timeout", "300", "--replay-buffer", "1024").start()
    host, port = server.host, server.port
    client = HTTPClient(host, port)
    sessions = await create_sessions(client, SESSIONS)
    frozen, witnesses = await open_all(host, port, sessions, PER_SESSION, rcvbuf=4096)
    check("every stream opened", all(s.status == 200 for s in frozen + list(witnesses.values())))
    witness_readers = [asyncio.create_task(w.read()) for w in witnesses.values()]
    # The first page of every session, so that news and refreshes bring items.
    for session in sessions:
        await client.request("POST", f"/api/sessions/{session}/refresh")
    await asyncio.sleep(1)
    rss_open = server.rss_kib()
    figure("RSS with every stream open", rss_open, "KiB")
    monitor = Monitor(server, every=1.0, csv_path=ARTIFACTS / "frozen-rss.csv").start()
    stop = asyncio.Event()
    refused = []
    load = asyncio.create_task(activity(host, port, sessions, stop, refused))
    await asyncio.sleep(FREEZE)
    stop.set()
    await load
    check("every publish is taken", not refused, refused[:2])
    rss_frozen_peak = max(row["rss_kib"] for row in monitor.rows)
    await asyncio.sleep(1)

    # What the rings hold and what a stopped reader has not read, from the witnesses.
    ring_bytes = 0
    largest_ring = 0
    largest_event = 0
    backlog = 0
    for session, witness in witnesses.items():
        kept = replayable(witness.events)[-1024:]
        ring = sum(bytes_of(e) for e in kept)
        ring_bytes += ring
        largest_ring = max(largest_ring, ring)
        largest_event = max([largest_event] + [bytes_of(e) for e in witness.events])
        backlog += PER_SESSION * witness.received_bytes  # all of it went out while they were stopped
    # While nobody reads: what it had, the rings (thrice, for the allocator), and per stopped
    # stream NIO's high-water mark plus the write that crossed it (a wake-up's events).
    bound_kib = rss_open + (3 * ring_bytes + FROZEN * (HIGH_WATER + 2 * largest_event)) // 1024 + 64 * 1024
    figure("replay rings, all sessions", ring_bytes // 1024, "KiB")
    figure("largest event", largest_event, "B")
    figure("backlog an unbounded server would hold", backlog // 1024, "KiB")
    figure("peak RSS while the readers were stopped", rss_frozen_peak, "KiB")
    figure("RSS bound while they are stopped", bound_kib, "KiB")
    check(f"RSS stays under the bound while {FROZEN} readers do not read", rss_frozen_peak <= bound_kib,
          f"{rss_frozen_peak} KiB > {bound_kib} KiB")
    check("each stopped reader was sent more than the server may hold for it (the bound is not vacuous)",
          backlog / FROZEN > HIGH_WATER + 2 * largest_event,
          f"{backlog // FROZEN} B each, allowance {HIGH_WATER + 2 * largest_event} B")
    # Catching up, a stream is handed everything after its place in one write: at most its
    # session's ring.
    catch_up_bound_kib = rss_open + (3 * ring_bytes + FROZEN * (HIGH_WATER + largest_ring)) // 1024 + 64 * 1024
    figure("RSS bound while they catch up", catch_up_bound_kib, "KiB")

    # ---------------------------------------------------------------- reading again
    began = time.monotonic()
    last = {s: w.last_id for s, w in witnesses.items()}
    results = await asyncio.gather(*(s.read(until=lambda s: s.last_id is not None and s.last_id >= last[s.session],
                                            timeout=120) for s in frozen))
    figure("time for every stopped reader to catch up", round(time.monotonic() - began, 2), "s")
    rows = monitor.stop()
    peak = max(row["rss_kib"] for row in rows)
    figure("peak RSS, catching up included", peak, "KiB")
    check("RSS stays under the bound while they catch up", peak <= catch_up_bound_kib,
          f"{peak} KiB > {catch_up_bound_kib} KiB")
    check("every stopped reader catches up with its witness", all(results), results.count(False))
    check("no stopped stream was dropped", all(s.sock is not None and not s.eof for s in frozen),
          sum(1 for s in frozen if s.eof))
    inexact, disorder = [], []
    for stream in frozen:
        witness = witnesses[stream.session]
        problem = compare(stream.events, witness.events, witness.first_id)
        if problem:
            inexact.append(problem)
        problems = action_order_problems(stream.events)
        if problems:
            disorder.append(problems[:2])
    figure("progress/items/done events each stopped reader got", sum(len(replayable(s.events)) for s in frozen) // FROZEN)
    figure("state events a stopped reader got, on average", sum(s.states for s in frozen) // FROZEN)
    figure("state events a witness got, on average", sum(w.states for w in witnesses.values()) // SESSIONS)
    check("every stopped reader gets every progress, items and done of its session, in order, once",
          not inexact, f"{len(inexact)} streams: {inexact[:2]}")
    check("ids increase, fractions never go back, done comes last", not disorder, disorder[:3])
    check("no stopped reader was told to reset for a gap", not any(gap_resets(s.events) for s in frozen))
    check("every stopped reader ends on its session's final state",
          all((s.state or {}).get("data") == (witnesses[s.session].state or {}).get("data") for s in frozen))
    for stream in frozen + list(witnesses.values()):
        stream.close()
    await asyncio.gather(*witness_readers, return_exceptions=True)
    server.stop()

    # ---------------------------------------------------------------- dropped after --send-timeout
    server = Server("--send-timeout", "2", "--stream-send-buffer", "8192").start()
    host, port = server.host, server.port
    client = HTTPClient(host, port)
    sessions = await create_sessions(client, 4)
    frozen, witnesses = await open_all(host, port, sessions, 5, rcvbuf=4096)
    witness_readers = [asyncio.create_task(w.read()) for w in witnesses.values()]
    for session in sessions:
        await client.request("POST", f"/api/sessions/{session}/refresh")
    stop = asyncio.Event()
    load = asyncio.create_task(activity(host, port, sessions, stop, refused, summary=4500))
    await asyncio.sleep(10)
    stop.set()
    await load
    await asyncio.sleep(1)
    # Read what the socket still held; the server has dropped the connection after it.
    await asyncio.gather(*(s.read(timeout=5) for s in frozen))
    dropped = [s for s in frozen if s.closed and not s.ended]
    figure("stopped streams dropped after --send-timeout 2", len(dropped))
    check("the server drops a stream whose reader stalls past --send-timeout", len(dropped) == len(frozen),
          f"{len(dropped)} of {len(frozen)}")
    again = []
    for stream in frozen:
        resumed = EventStream(host, port, stream.session, last_event_id=stream.last_id, compact=True)
        await resumed.open()
        again.append((stream, resumed))
    last = {s: w.last_id for s, w in witnesses.items()}
    await asyncio.gather(*(r.read(until=lambda r: r.last_id is not None and r.last_id >= last[r.session], timeout=20)
                           for _, r in again))
    inexact = []
    resets = 0
    for before, after in again:
        witness = witnesses[before.session]
        resets += len(gap_resets(after.events))
        problem = compare(before.events + after.events, witness.events, witness.first_id)
        if problem:
            inexact.append(problem)
    figure("resets after the drop (past the replay buffer)", resets)
    check("a dropped reader reconnecting with Last-Event-ID gets everything, in order, once",
          not inexact, inexact[:2])
    for stream in [r for _, r in again] + list(witnesses.values()):
        stream.close()
    await asyncio.gather(*witness_readers, return_exceptions=True)
    server.stop()


asyncio.run(main())
finish()
