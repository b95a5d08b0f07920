"""Replay memory is bounded in bytes: sessions that page through large items keep at most
`--replay-buffer-bytes` of events each, not `--replay-buffer` events of any size.

Two servers in turn, alike but for that setting: the default (1 MiB a session), and one
that bounds by count alone (a gibibyte a session, so the 256 events decide). On each, 60
sessions (full: 120) page 25 times through items of about 2 KB (20 a page, so about 45 KB
an `items` event), waiting for each page's `done`; RSS is read before the first session
and after the last. Then a reader asks one session for everything since its first page:
under the byte bound that is a `reset`, under the count bound the whole replay. Before them,
sessions page through items of escaped characters (600 KB an `items` event): the bound holds
for events that large too."""
import asyncio

from lib import EventStream, HTTPClient, Server, check, figure, finish, pick, request

SESSIONS = pick(60, 120)
PAGES = 25
PAGE_SIZE = 20
ITEM_BYTES = 2000
MIB = 1024 * 1024


def publish_items(server, pages=PAGES, escaped=False):
    """pages × PAGE_SIZE items, each about ITEM_BYTES of JSON (most of it the summary); or,
    `escaped`, a summary of 4,900 `<`, which every answer writes as `\u003c`: about 30 KB of
    JSON an item, 600 KB an `items` event."""
    count = pages * PAGE_SIZE + PAGE_SIZE
    batch = 10 if escaped else 20
    for start in range(0, count, batch):
        items = [{"id": f"item-{index:05d}", "title": f"Item {index}",
                  "summary": "<" * 4900 if escaped else (f"{index} " * ITEM_BYTES)[:ITEM_BYTES - 100],
                  "published": f"2026-01-01T00:{(index // 60) % 60:02d}:{index % 60:02d}Z"}
                 for index in range(start, min(count, start + batch))]
        status, _, body = request(server, "POST", "/api/items", {"items": items})
        if status != 201:
            raise RuntimeError(f"publishing was refused: {status} {body[:300]!r}")


async def page_through(server, index, pages=PAGES):
    """One session: its stream open, `pages` load-mores one after the other, each to its
    `done`. Answers the session's id and the id of its first event."""
    client = HTTPClient("127.0.0.1", server.port)
    status, session = await client.json("POST", "/api/sessions", {"preset": "default"})
    assert status == 201, (status, session)
    stream = EventStream("127.0.0.1", server.port, session["id"], compact=True)
    await stream.open()
    for page in range(pages):
        status, action = await client.json("POST", f"/api/sessions/{session['id']}/load-more")
        assert status == 202, (status, action)

        def finished(s, wanted=action["actionId"]):
            return any(e.get("event") == "done" and e["data"].get("actionId") == wanted for e in s.events)

        if not await stream.read(until=finished, timeout=30):
            kinds = [e.get("event") for e in stream.events[-8:]]
            raise RuntimeError(f"session {index}: page {page} did not finish (closed by the server: {stream.eof}, "
                               f"error: {stream.error}, the last events: {kinds}, {stream.received_bytes} bytes read)")
    first = stream.first_id
    stream.close()
    client.close()
    return session["id"], first


async def run(server, sessions=SESSIONS, pages=PAGES):
    ids = []
    # A few at a time, as pages come and go.
    for start in range(0, sessions, 10):
        ids += await asyncio.gather(*(page_through(server, index, pages) for index in range(start, min(sessions, start + 10))))
    return ids


async def replayed_from(server, session, first_id):
    stream = EventStream("127.0.0.1", server.port, session, last_event_id=first_id, compact=True)
    await stream.open()
    await stream.read(until=lambda s: any(e.get("event") in ("reset", "done") for e in s.events), timeout=10)
    kinds = [e.get("event") for e in stream.events]
    stream.close()
    return kinds


def measure(label, *flags):
    server = Server("--no-demo", "--page-size", str(PAGE_SIZE), "--max-sessions-per-client", "1000",
                    "--max-streams-per-client", "1000", *flags).start()
    try:
        publish_items(server)
        before = server.rss_kib()
        ids = asyncio.run(run(server))
        after = server.rss_kib()
        growth = (after - before) / 1024
        figure(f"{label}: RSS before the sessions", before / 1024, "MiB")
        figure(f"{label}: RSS growth, {SESSIONS} sessions × {PAGES} pages of {PAGE_SIZE} × 2 KB", growth, "MiB")
        session, first_id = ids[0]
        kinds = asyncio.run(replayed_from(server, session, first_id))
        return growth, kinds
    finally:
        server.stop()


def measure_escaped(sessions, pages):
    """Pages of items of escaped characters, each `items` event over half the bound: the ring
    keeps the bound's worth (or the newest page alone), not its newest sixteen events."""
    server = Server("--no-demo", "--page-size", str(PAGE_SIZE), "--max-sessions-per-client", "1000",
                    "--max-streams-per-client", "1000").start()
    try:
        publish_items(server, pages, escaped=True)
        before = server.rss_kib()
        asyncio.run(run(server, sessions, pages))
        return (server.rss_kib() - before) / 1024
    finally:
        server.stop()


ESCAPED_SESSIONS = pick(20, 40)
ESCAPED_PAGES = 18
escaped = measure_escaped(ESCAPED_SESSIONS, ESCAPED_PAGES)
figure(f"escaped pages: RSS growth, {ESCAPED_SESSIONS} sessions × {ESCAPED_PAGES} pages of {PAGE_SIZE} × 30 KB", escaped, "MiB")
# The bound is a MiB a session; each keeps about one page. Kept by their newest sixteen
# events whatever their size, as rings once were, the same sessions grew RSS by about
# 2.7 MiB each (54 MiB for 20), ten times this.
check(f"{ESCAPED_SESSIONS} sessions paging through pages of escaped characters grow RSS by at most 1 MiB each and 8 MiB",
      escaped < ESCAPED_SESSIONS + 8, f"{escaped:.1f} MiB")

bounded, bounded_replay = measure("bounded (default 1 MiB a session)")
unbounded, unbounded_replay = measure("by count alone (--replay-buffer-bytes 1073741824)", "--replay-buffer-bytes", str(1 << 30))
# What the rings hold at most under the byte bound: a MiB a session, and one event beyond.
bound = SESSIONS * (1 + 64 / 1024)
check(f"{SESSIONS} sessions' replay grows RSS by at most their rings' bound ({bound:.0f} MiB) and 16 MiB",
      bounded < bound + 16, f"{bounded:.1f} MiB")
if SESSIONS == 60:
    check("60 sessions paging 25 times through 2 KB items grow RSS by well under 100 MB (under 75 MB)",
          bounded * MIB < 75e6, f"{bounded * MIB / 1e6:.1f} MB")
check("bounding by count alone grows it by more: the bound is what holds it", unbounded > bounded + 10,
      f"{unbounded:.1f} MiB by count, {bounded:.1f} MiB by bytes")
check("a reader behind the byte bound gets reset", bounded_replay[:1] == ["reset"], bounded_replay[:5])
check("by count alone the same reader gets its pages replayed", "reset" not in unbounded_replay and "items" in unbounded_replay,
      unbounded_replay[:5])
finish()
