"""A TCP proxy that delays every byte by a fixed time, both ways: a phone network's round
trip on loopback, where `tc netem` is not available.

Every chunk read from one side is written to the other `one_way` seconds after it was read,
in order, whatever else is in flight; a half-close travels with the same delay. So a request
and its answer take `2 · one_way` more than they would direct, which is the round trip of
the network being imitated (75 ms each way: a 4G phone's 150 ms). Bandwidth, loss and the
handshakes of new connections are not imitated: a new connection costs nothing extra.

From Python (the proxy runs on an event loop of its own, in a thread):

    from delay_proxy import delaying_proxy
    with delaying_proxy("127.0.0.1", 8080, round_trip_ms=150) as port:
        ...  # http://127.0.0.1:{port}/ is the server, 150 ms further away

By hand: `python3 Tests/support/delay_proxy.py --to 127.0.0.1:8080 --port 8150 --rtt 150`.
It needs only the standard library."""

import argparse
import asyncio
import contextlib
import threading

CHUNK = 64 * 1024


async def _carry(reader, writer, one_way, loop):
    """Copies `reader` to `writer`, each chunk `one_way` seconds after it was read. The
    chunks wait in a queue of their own, so a slow write never delays a later read."""
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                if not writer.is_closing() and writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    delivery = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(CHUNK)
            queue.put_nowait((loop.time() + one_way, data or None))
            if not data:
                break
        await delivery
    except (ConnectionError, OSError):
        pass
    finally:
        delivery.cancel()


async def _serve_connection(client_reader, client_writer, upstream, one_way):
    loop = asyncio.get_running_loop()
    try:
        server_reader, server_writer = await asyncio.open_connection(*upstream)
    except OSError:
        client_writer.close()
        return
    try:
        await asyncio.gather(
            _carry(client_reader, server_writer, one_way, loop),
            _carry(server_reader, client_writer, one_way, loop),
        )
    finally:
        for writer in (client_writer, server_writer):
            writer.close()


async def start(upstream_host, upstream_port, round_trip_ms, host="127.0.0.1", port=0):
    """Starts listening; answers the asyncio server (its socket's port is where to connect)."""
    one_way = round_trip_ms / 2000

    async def handle(reader, writer):
        # Cancelled when the proxy stops: the connection ends there, quietly.
        with contextlib.suppress(asyncio.CancelledError):
            await _serve_connection(reader, writer, (upstream_host, upstream_port), one_way)

    return await asyncio.start_server(handle, host, port)


@contextlib.contextmanager
def delaying_proxy(upstream_host, upstream_port, round_trip_ms, host="127.0.0.1"):
    """A proxy to the server at `upstream_host:upstream_port`, `round_trip_ms` further away,
    running in a thread while the block runs; yields the port it listens on."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box = {}

    def run():
        asyncio.set_event_loop(loop)
        box["server"] = loop.run_until_complete(start(upstream_host, upstream_port, round_trip_ms, host))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="delaying-proxy", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield box["server"].sockets[0].getsockname()[1]
    finally:
        async def stop():
            box["server"].close()
            # Cancelling a connection cancels the deliveries it runs: until none is left.
            while tasks := [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--to", required=True, help="the server, HOST:PORT")
    parser.add_argument("--port", type=int, default=0, help="where to listen (default: any free port)")
    parser.add_argument("--rtt", type=float, default=150, help="the round trip to add, in milliseconds")
    arguments = parser.parse_args()
    host, _, port = arguments.to.rpartition(":")

    async def serve():
        server = await start(host, int(port), arguments.rtt, port=arguments.port)
        print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]} -> {arguments.to}, "
              f"{arguments.rtt:g} ms round trip", flush=True)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
