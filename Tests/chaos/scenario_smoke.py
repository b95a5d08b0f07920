"""The harness itself: a server starts, answers, restarts on the same port, and stops."""
from lib import Server, check, figure, finish, request

with Server() as server:
    check("healthz answers 200", request(server, "GET", "/healthz")[0] == 200)
    server.kill()
    server.start()
    check("a restart on the same port answers", request(server, "GET", "/healthz")[0] == 200)
    figure("rss after start", server.rss_kib(), "KiB")
    seconds = server.stop()
    check("SIGTERM ends an idle server within seconds", seconds is not None and seconds < 10, seconds)
finish()
