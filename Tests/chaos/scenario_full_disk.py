"""A full disk under the feed store: SQLite on a small tmpfs (and PostgreSQL's data folder on
one), filled by a file until publishing fails, then the file removed.

Invariants: while the disk is full, a publish answers 503 `store_unavailable` with a JSON
error and `Retry-After` (never 500, never 201 for an item that is not stored), and SQLite's
`/readyz` says it is not ready (ready again once space returns); every item
acknowledged before or during it is still there and readable; reads, sessions and samples
keep working; when space returns, publishing resumes without a restart; afterwards the
database passes its integrity check and positions are dense 1…n, also after a restart.

Needs root for `mount -t tmpfs`: without it the scenario says SKIP and exits 77, which is
not a pass."""
import contextlib
import json
import os
import subprocess
import tempfile
import time

from lib import ROOT, Server, check, figure, finish, pick, request, request_json, skip

ROUNDS = pick(1, 3)  # fill / free cycles per store
SIZE_MIB = 6


@contextlib.contextmanager
def tmpfs(size_mib):
    folder = tempfile.mkdtemp(prefix="ptr-chaos-disk.")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", folder],
                             stderr=subprocess.PIPE, text=True)
    if mounted.returncode != 0:
        os.rmdir(folder)
        skip(f"mount -t tmpfs is not permitted here ({mounted.stderr.strip()}): the full disk is not tested")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", folder], check=False)
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def fill(path):
    """Writes until the file system is full; answers the bytes written."""
    written = 0
    block = b"\0" * 65536
    with open(path, "ab", buffering=0) as filler:
        while True:
            try:
                written += filler.write(block)
            except OSError:
                break
        for size in (4096, 512, 1):
            while True:
                try:
                    written += filler.write(b"\0" * size)
                except OSError:
                    break
    return written


def listed(server):
    ids, before = [], ""
    while True:
        status, page = request_json(server, "GET", f"/api/items?limit=200{'&before=' + before if before else ''}")
        if status != 200:
            return None
        ids += [item["id"] for item in page["items"]]
        if not page["hasMore"] or not page["items"]:
            return ids
        before = page["items"][-1]["id"]


def publish(server, item_id, summary_size=4000):
    status, headers, body = request(server, "POST", "/api/items",
                                    {"id": item_id, "title": f"title {item_id}", "summary": "s" * summary_size}, timeout=15)
    with contextlib.suppress(ValueError):
        body = json.loads(body)
    return status, headers, body


def exercise(store, server, filler, acknowledged, statuses, integrity):
    """One fill / free cycle; `integrity()` answers the store's own consistency verdict."""
    counter = len(acknowledged) + sum(statuses.values())
    for _ in range(20):
        counter += 1
        status, _, _ = publish(server, f"{store}-before-{counter}")
        statuses[status] = statuses.get(status, 0) + 1
        if status == 201:
            acknowledged.add(f"{store}-before-{counter}")
    filled = fill(filler)
    figure(f"{store} filler bytes", filled)
    refused = consecutive = 0
    bad_refusals = []
    began = time.monotonic()
    while consecutive < 15 and time.monotonic() - began < pick(30, 90):
        counter += 1
        item_id = f"{store}-full-{counter}"
        status, headers, body = publish(server, item_id)
        statuses[status] = statuses.get(status, 0) + 1
        if status == 201:
            acknowledged.add(item_id)
            consecutive = 0
            continue
        consecutive += 1
        refused += 1
        if not (status == 503 and isinstance(body, dict) and body.get("error") == "store_unavailable"
                and "retry-after" in headers):
            bad_refusals.append((status, str(body)[:200]))
    check(f"{store}: the full disk refuses publishes", refused > 0, statuses)
    check(f"{store}: each refusal is 503 store_unavailable, JSON, with Retry-After", not bad_refusals, bad_refusals[:3])
    check(f"{store}: never a 500", 500 not in statuses, statuses)
    ids = listed(server)
    check(f"{store}: reads work on a full disk", ids is not None)
    check(f"{store}: every acknowledged item is readable on a full disk", ids is not None and acknowledged <= set(ids),
          f"{len(acknowledged - set(ids or []))} missing")
    check(f"{store}: healthz on a full disk", request(server, "GET", "/healthz")[0] == 200)
    if store == "sqlite":
        status, ready = request_json(server, "GET", "/readyz")
        check(f"{store}: readyz says not ready while writes cannot be made", status == 503, (status, ready))
    status, session = request_json(server, "POST", "/api/sessions", {"preset": "default"})
    check(f"{store}: a session opens on a full disk", status == 201, (status, session))
    if status == 201:
        status, _ = request_json(server, "POST", f"/api/sessions/{session['id']}/samples", {"seq": 1, "y": -20})
        check(f"{store}: a sample applies on a full disk", status == 200, status)
    # Space returns.
    os.remove(filler)
    resumed_after = None
    began = time.monotonic()
    while time.monotonic() - began < 20:
        counter += 1
        item_id = f"{store}-after-{counter}"
        status, _, body = publish(server, item_id)
        statuses[status] = statuses.get(status, 0) + 1
        if status == 201:
            acknowledged.add(item_id)
            resumed_after = time.monotonic() - began
            break
        time.sleep(0.2)
    check(f"{store}: publishing resumes when space returns (no restart)", resumed_after is not None, statuses)
    status, ready = request_json(server, "GET", "/readyz")
    check(f"{store}: readyz says ready again once space returns", status == 200, (status, ready))
    figure(f"{store} publishing resumed after", resumed_after if resumed_after is not None else -1, "s")
    ids = listed(server)
    check(f"{store}: every acknowledged item is there once space returns",
          ids is not None and acknowledged <= set(ids) and len(ids) == len(set(ids)))
    ok, detail = integrity()
    check(f"{store}: the store's integrity check passes", ok, detail)
    figure(f"{store} refused while full", refused)


def sqlite_integrity(path):
    import sqlite3
    with sqlite3.connect(path, timeout=10) as db:
        verdict = db.execute("PRAGMA integrity_check").fetchone()[0]
        positions = [row[0] for row in db.execute("SELECT position FROM item ORDER BY position")]
    dense = positions == list(range(1, len(positions) + 1))
    return verdict == "ok" and dense, f"integrity {verdict}, positions dense {dense}"


def postgres_integrity(url):
    rows = subprocess.run(["psql", url, "-tAq", "-c",
                           "SELECT position FROM feed_head UNION ALL (SELECT position FROM item ORDER BY position)"],
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if rows.returncode != 0:
        return False, rows.stderr.strip()
    values = [int(v) for v in rows.stdout.split()]
    dense = values[1:] == list(range(1, len(values))) and values[0] == len(values) - 1
    return dense, f"head {values[0]}, {len(values) - 1} positions, dense {dense}"


def sqlite_run():
    with tmpfs(SIZE_MIB) as folder:
        database = os.path.join(folder, "feed.sqlite")
        server = Server("--no-demo", database=database)
        server.start()
        acknowledged, statuses = set(), {}
        began = time.monotonic()
        for _ in range(ROUNDS):
            exercise("sqlite", server, os.path.join(folder, "filler"), acknowledged, statuses,
                     lambda: sqlite_integrity(database))
        server.stop()
        ok, detail = sqlite_integrity(database)
        check("sqlite: integrity after the server stopped", ok, detail)
        server.start()
        ids = listed(server)
        check("sqlite: every acknowledged item survives a restart", ids is not None and acknowledged <= set(ids))
        server.stop()
        figure("sqlite items acknowledged", len(acknowledged))
        figure("sqlite statuses", json.dumps({str(k): v for k, v in sorted(statuses.items())}))
        figure("sqlite duration", time.monotonic() - began, "s")


def postgres_run():
    """PostgreSQL's data folder on a tmpfs of its own: a full data file fails a transaction
    cleanly, a full WAL makes PostgreSQL stop itself (PANIC) and restart after recovery."""
    if os.environ.get("PTR_TEST_POSTGRES"):
        print("  postgres on a full disk: PTR_TEST_POSTGRES names an outside server; not tested", flush=True)
        return
    with tmpfs(96) as folder:
        os.chmod(folder, 0o777)
        url = subprocess.run(["bash", str(ROOT / "scripts" / "postgres"), "start", folder + "/db"],
                             check=True, text=True, stdout=subprocess.PIPE).stdout.strip()
        try:
            server = Server("--no-demo", database=url)
            server.start()
            acknowledged, statuses = set(), {}
            began = time.monotonic()
            exercise("postgres", server, os.path.join(folder, "filler"), acknowledged, statuses,
                     lambda: postgres_integrity(url))
            server.stop()
            figure("postgres items acknowledged", len(acknowledged))
            figure("postgres statuses", json.dumps({str(k): v for k, v in sorted(statuses.items())}))
            figure("postgres duration", time.monotonic() - began, "s")
        finally:
            subprocess.run(["bash", str(ROOT / "scripts" / "postgres"), "stop", folder + "/db"],
                           check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


sqlite_run()
postgres_run()
finish()
