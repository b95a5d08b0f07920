"""SIGTERM under load: streams open, pages dragging and refreshing, publishes and requests
in flight when the signal comes.

What must hold:
- the process exits within 2 s of the signal, with status 0;
- every event stream ends with its terminating chunk (`0\\r\\n\\r\\n`; a gzip stream with its
  gzip trailer first), then the connection closes;
- every answer that started is complete; a request the server is known to have read (it
  answered `100 Continue` to its head, or had part of its head) gets a complete answer with
  `Connection: close`;
- a request that got no answer at all was never acted on: no stream shows its sample's
  `seq`, and after a restart on the same database the store has no item it published (a
  `201` item is there). Connections refused or reset after the listener closed count as
  never accepted.
"""
import asyncio
import os
import signal
import tempfile
import time
import uuid

from lib import (EventStream, HTTPClient, Server, action_order_problems, check, connect, figure, finish,
                 json_request, pick, pull_samples, raise_fd_limit, request_json, Response, rest_sample)

STREAMS = pick(200, 500)
STREAMS_PER_SESSION = 4
SESSIONS = STREAMS // STREAMS_PER_SESSION
LOAD_SECONDS = pick(2.0, 5.0)
HELD = 8  # requests whose head the server has read (100 Continue) when the signal comes


class Outcome:
    def __init__(self, kind, detail=""):
        self.kind, self.detail = kind, detail


async def one_request(host, port, method, path, body):
    """One request on a connection of its own; how it ended: `answered` (complete),
    `partial` (an answer cut short), `refused` (no connection), `unanswered` (connected, no
    byte of an answer)."""
    loop = asyncio.get_running_loop()
    try:
        sock = await connect(host, port, timeout=5)
    except OSError as error:
        return Outcome("refused", type(error).__name__), None
    response = Response()
    try:
        await loop.sock_sendall(sock, json_request(method, path, body, host, close=True, port=port))
        while not response.complete:
            data = await asyncio.wait_for(loop.sock_recv(sock, 65536), 10)
            if not data:
                break
            response.feed(data)
    except (OSError, asyncio.TimeoutError) as error:
        if response.status is None and not response.buffer:
            return Outcome("unanswered", type(error).__name__), None
        return Outcome("partial", type(error).__name__), response
    finally:
        sock.close()
    if response.complete:
        return Outcome("answered", response.status), response
    if response.status is None and not response.buffer:
        return Outcome("unanswered", "eof"), None
    return Outcome("partial", "eof"), response


async def main():
    raise_fd_limit()
    folder = tempfile.mkdtemp(prefix="ptr-chaos-sigterm.")
    server = Server("--max-streams-per-client", "100000", "--max-sessions-per-client", "100000",
                    "--max-samples-per-second", "1000", database=os.path.join(folder, "feed.sqlite")).start()
    host, port = server.host, server.port
    client = HTTPClient(host, port)
    sessions = []
    for _ in range(SESSIONS):
        status, body = await client.json("POST", "/api/sessions", {"preset": "default"})
        assert status == 201, (status, body)
        sessions.append(body["id"])
    client.close()
    streams = []
    for index in range(STREAMS):
        stream = EventStream(host, port, sessions[index % SESSIONS], gzip=index % 4 == 3)
        streams.append(stream)
    statuses = await asyncio.gather(*(stream.open() for stream in streams))
    check("every stream opened", all(s == 200 for s in statuses), [s for s in statuses if s != 200][:5])
    readers = [asyncio.create_task(stream.read()) for stream in streams]

    # Two readers that stopped reading, their sockets full: shutdown must not wait on them.
    frozen_session = (await HTTPClient(host, port).json("POST", "/api/sessions", {}))[1]["id"]
    frozen = [EventStream(host, port, frozen_session, rcvbuf=4096) for _ in range(2)]
    for stream in frozen:
        await stream.open()
    filler = HTTPClient(host, port)
    for round_ in range(10):
        batch = [{"title": f"Filler {round_}-{n}", "summary": "s" * 2000} for n in range(25)]
        await filler.request("POST", "/api/items", {"items": batch})
        await filler.request("POST", f"/api/sessions/{frozen_session}/refresh")
        await asyncio.sleep(0.05)
    filler.close()

    stop = asyncio.Event()
    signalled = [None]
    samples_sent = {}   # session -> list of (first seq, last seq, outcome kind)
    published = []      # (item id, outcome kind, status)
    answers = []        # every Outcome of the loops

    async def drag(session):
        seq, t = 1, 0
        sent = samples_sent.setdefault(session, [])
        while not stop.is_set():
            gesture, seq_after, t = pull_samples(seq, t, frames=6)
            batches = [gesture[i:i + 2] for i in range(0, len(gesture), 2)] + [[rest_sample(seq_after, t)]]
            seq_after, t = seq_after + 1, t + 16
            for batch in batches:
                outcome, _ = await one_request(host, port, "POST", f"/api/sessions/{session}/samples",
                                               {"samples": batch})
                sent.append((batch[0]["seq"], batch[-1]["seq"], outcome.kind))
                answers.append(outcome)
                if outcome.kind == "refused" or stop.is_set():
                    return
                await asyncio.sleep(0.016)
            seq = seq_after
            await asyncio.sleep(0.3)

    async def publish():
        while not stop.is_set():
            item = f"sigterm-{uuid.uuid4().hex[:12]}"
            outcome, response = await one_request(host, port, "POST", "/api/items",
                                                  {"id": item, "title": f"Published under load {item}"})
            published.append((item, outcome.kind, response.status if response else None))
            answers.append(outcome)
            if outcome.kind == "refused":
                return
            await asyncio.sleep(0.05)

    async def refresh_now(session):
        while not stop.is_set():
            await asyncio.sleep(0.5)
            outcome, _ = await one_request(host, port, "POST", f"/api/sessions/{session}/refresh", None)
            answers.append(outcome)
            if outcome.kind == "refused":
                return

    loops = [asyncio.create_task(drag(s)) for s in sessions]
    loops += [asyncio.create_task(publish()) for _ in range(3)]
    loops += [asyncio.create_task(refresh_now(s)) for s in sessions[:SESSIONS // 4]]
    await asyncio.sleep(LOAD_SECONDS)

    # Requests the server has certainly read: it answered `100 Continue` to their heads.
    loop = asyncio.get_running_loop()
    held = []
    for index in range(HELD):
        session = sessions[index]
        if index % 2:
            path, body = "/api/items", json_request("POST", "/api/items", {"id": f"held-{index}-{uuid.uuid4().hex[:8]}",
                                                                          "title": "Held across SIGTERM"}, host, port=port)
        else:
            path, body = f"/api/sessions/{session}/samples", json_request(
                "POST", f"/api/sessions/{session}/samples", {"seq": 10_000_000 + index, "t": 0, "y": -10}, host, port=port)
        head, _, payload = body.partition(b"\r\n\r\n")
        sock = await connect(host, port)
        await loop.sock_sendall(sock, head + b"\r\nExpect: 100-continue\r\n\r\n")
        response = Response()
        while not response.interim:
            response.feed(await asyncio.wait_for(loop.sock_recv(sock, 4096), 5))
        held.append((sock, payload, response, path))
    # Requests half-way through their heads.
    halves = []
    for index in range(4):
        data = json_request("POST", "/api/items", {"id": f"half-{index}-{uuid.uuid4().hex[:8]}", "title": "Half a head"},
                            host, port=port)
        sock = await connect(host, port)
        await loop.sock_sendall(sock, data[:20])
        halves.append((sock, data[20:]))
    await asyncio.sleep(0.2)  # the halves have been read

    figure("streams open at the signal", sum(not s.closed for s in streams))
    signalled[0] = time.monotonic()
    server.process.send_signal(signal.SIGTERM)

    async def complete(sock, rest, response):
        try:
            await loop.sock_sendall(sock, rest)
            while not response.complete:
                data = await asyncio.wait_for(loop.sock_recv(sock, 65536), 5)
                if not data:
                    break
                response.feed(data)
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            sock.close()
        return response

    # The bodies go once the listener is closed: the connections are quiescing by then, so
    # these requests are answered by a server that is stopping.
    while time.monotonic() - signalled[0] < 2:
        try:
            (await connect(host, port, timeout=1)).close()
        except OSError:
            break
        await asyncio.sleep(0.01)
    figure("listener closed after SIGTERM", round(time.monotonic() - signalled[0], 3), "s")
    await asyncio.sleep(0.05)
    held_answers = await asyncio.gather(*(complete(sock, rest, response) for sock, rest, response, _ in held))
    half_answers = await asyncio.gather(*(complete(sock, rest, Response()) for sock, rest in halves))

    try:
        exited = await loop.run_in_executor(None, lambda: server.process.wait(timeout=20))
    except Exception:
        server.kill()
        exited = "killed after 20 s"
    exit_seconds = time.monotonic() - signalled[0]
    stop.set()
    await asyncio.gather(*loops, return_exceptions=True)
    await asyncio.wait_for(asyncio.gather(*readers, return_exceptions=True), 10)

    figure("exit after SIGTERM", round(exit_seconds, 3), "s")
    # By the 1 s drain deadline, with room for a busy machine: readers that stopped reading
    # would otherwise hold it for the 120 s send deadline.
    check("the process exits within seconds of SIGTERM, though two readers have stopped reading",
          exit_seconds < 10.0, f"{exit_seconds:.2f} s")
    check("it exits with status 0", exited == 0, exited)

    clean = [s for s in streams if s.ended and s.eof]
    figure("streams ended cleanly", len(clean))
    figure("streams that were gzip", sum(1 for s in streams if s.headers.get("content-encoding") == "gzip"))
    check("every stream ends with its terminating chunk, then the connection closes",
          len(clean) == len(streams),
          f"{len(streams) - len(clean)} of {len(streams)} did not; e.g. ended={streams[0].ended} "
          f"eof={streams[0].eof} error={streams[0].error}" if len(clean) != len(streams) else "")
    problems = [p for s in streams for p in action_order_problems(s.events)]
    check("every stream's ids increase and each action's events keep their order", not problems, problems[:3])
    figure("events received", sum(len(s.events) for s in streams))

    check("every request whose head the server read (100 Continue) gets a complete answer",
          all(r.complete and r.status in (200, 201) for r in held_answers),
          [(r.status, r.complete) for r in held_answers])
    check("... and that answer says Connection: close",
          all(r.headers.get("connection", "").lower() == "close" for r in held_answers if r.complete),
          [r.headers.get("connection") for r in held_answers])
    check("every request half-way through its head at the signal gets a complete answer",
          all(r.complete and r.status == 201 for r in half_answers), [(r.status, r.complete) for r in half_answers])

    kinds = {}
    for outcome in answers:
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
    for kind in ("answered", "refused", "unanswered", "partial"):
        figure(f"requests {kind}", kinds.get(kind, 0))
    check("no answer is cut short", kinds.get("partial", 0) == 0,
          [o.detail for o in answers if o.kind == "partial"][:5])
    bad = [o.detail for o in answers if o.kind == "answered" and isinstance(o.detail, int) and o.detail >= 500
           and o.detail != 503]
    check("no request is answered 5xx (but 503)", not bad, bad[:5])

    # A sample that got no answer must not have been applied: no stream shows its seq.
    applied = {}
    for stream in streams:
        for event in stream.events:
            if event.get("event") == "state" and isinstance(event.get("data"), dict) \
                    and 0 < (event["data"].get("seq") or 0) < 10_000_000:
                applied[stream.session] = max(applied.get(stream.session, 0), event["data"]["seq"])
    acted_unanswered = [(session, first, last) for session, sent in samples_sent.items()
                        for first, last, kind in sent if kind == "unanswered" and applied.get(session, 0) >= first]
    check("no unanswered samples request was applied", not acted_unanswered, acted_unanswered[:5])

    # The same database, started again: 201 items are there, unanswered ones are not.
    server.start()
    missing, acted = [], []
    for item, kind, status in published:
        found = request_json(server, "GET", f"/api/items?after={item}&limit=1")[0] == 200
        if kind == "answered" and status == 201 and not found:
            missing.append(item)
        if kind in ("unanswered", "refused") and found:
            acted.append(item)
    figure("items published with 201", sum(1 for _, kind, status in published if status == 201))
    check("every item answered 201 is stored", not missing, missing[:5])
    check("no item whose publish got no answer is stored", not acted, acted[:5])
    server.stop()


asyncio.run(main())
finish()
