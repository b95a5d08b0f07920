"""The SQLite file locked by another process, as a backup or a `sqlite3` shell left in
`BEGIN EXCLUSIVE` would: this scenario opens the server's database itself and holds its
write lock, sends a burst of concurrent publishes, reads /readyz, then lets go.

Invariants: while the lock is held every publish is answered 503 within the store's
deadline (5 s) plus a second from when it was sent, however many queue behind one another
(not 5 s more for each); /readyz answers 503 with a JSON reason while writes cannot get the
lock, and 200 again within two seconds of the lock's release; reads go on (WAL); nothing
answered 503 is stored; publishing works again after the release; the file is intact."""
import sqlite3
import tempfile
import threading
import time

from lib import Server, check, figure, finish, pick, request, request_json

BURST = pick(5, 25)
ROUNDS = pick(1, 3)
DEADLINE = 5.0

folder = tempfile.mkdtemp(prefix="ptr-chaos-sqlite-locked.")
path = f"{folder}/refresh.sqlite"
began = time.monotonic()
with Server("--no-demo", database=path) as server:
    check("ready before the lock", request(server, "GET", "/readyz")[0] == 200)
    refused_ids, slowest, readyz_503_after, readyz_200_after = [], 0.0, [], []
    for round_number in range(ROUNDS):
        holder = sqlite3.connect(path, isolation_level=None, timeout=10)
        holder.execute("BEGIN EXCLUSIVE")
        locked_at = time.monotonic()

        status, body = request_json(server, "GET", "/readyz", timeout=10)
        readyz_503_after.append(time.monotonic() - locked_at)
        check("/readyz answers 503 while writes cannot get the lock", status == 503, (status, body))
        check("/readyz's 503 names the store", isinstance(body, dict) and body.get("error") == "store_unavailable", body)
        check("reads go on while the lock is held", request(server, "GET", "/api/items")[0] == 200)

        answers = []

        def publish(index):
            item_id = f"locked-{round_number}-{index}"
            started = time.monotonic()
            status, _ = request_json(server, "POST", "/api/items", {"id": item_id, "title": "locked out"}, timeout=60)
            answers.append((item_id, status, time.monotonic() - started))

        threads = [threading.Thread(target=publish, args=(n,)) for n in range(BURST)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        took = [seconds for _, _, seconds in answers]
        slowest = max([slowest, *took])
        check(f"all {BURST} publishes answered 503 while locked", [s for _, s, _ in answers] == [503] * BURST,
              sorted({s for _, s, _ in answers}))
        # Each waits the deadline from its arrival, not behind the others' waits (the last of a
        # queue would then wait the deadline once for each before it).
        check("each within twice the deadline of being sent, however many queued", max(took) <= 2 * DEADLINE,
              f"slowest {max(took):.2f} s")
        refused_ids += [item_id for item_id, status, _ in answers if status == 503]

        holder.execute("ROLLBACK")
        holder.close()
        released_at = time.monotonic()
        while request(server, "GET", "/readyz")[0] != 200 and time.monotonic() - released_at < 30:
            time.sleep(0.05)
        readyz_200_after.append(time.monotonic() - released_at)
        check("/readyz answers 200 within seconds of the release", readyz_200_after[-1] <= 10, f"{readyz_200_after[-1]:.2f} s")
        status, _ = request_json(server, "POST", "/api/items", {"id": f"after-{round_number}", "title": "after"})
        check("a publish after the release is stored", status == 201, status)

    _, body = request_json(server, "GET", "/api/items?limit=200")
    listed = {item["id"] for item in body["items"]}
    check("nothing answered 503 is stored", not (listed & set(refused_ids)), sorted(listed & set(refused_ids))[:5])
    check("every publish after a release is listed", {f"after-{n}" for n in range(ROUNDS)} <= listed, sorted(listed))
check("the file is intact", sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok")

figure("publishes refused while locked", len(refused_ids))
figure("slowest 503 while locked (of a burst of %d)" % BURST, slowest, "s")
figure("/readyz 503 after the lock was taken (slowest)", max(readyz_503_after), "s")
figure("/readyz 200 after the lock was let go (slowest)", max(readyz_200_after), "s")
figure("duration", time.monotonic() - began, "s")
finish()
