// A session's event stream, as an EventSource or through the stream every tab of this
// origin shares (stream-worker.js). The shared one is used where it is needed and can be
// had: the page came over HTTP/1.x (over HTTP/2 or 3 streams share one connection anyway),
// the API is on the page's origin, and the browser has SharedWorker and Web Locks.
// Elsewhere each tab opens its own EventSource, as before.

let worker; // undefined: not tried yet; null: not available
/** session id → SharedSource, for the messages the worker sends this tab. */
const sources = new Map();

/** Whether this page may share one stream among its tabs. `globalThis.PTR_SHARED_STREAM`
 *  set to false turns it off (each tab then opens its own EventSource). */
function sharing(crossOrigin) {
  if (crossOrigin || globalThis.PTR_SHARED_STREAM === false) return false;
  if (typeof SharedWorker !== "function" || !navigator.locks) return false;
  const protocol = performance.getEntriesByType?.("navigation")?.[0]?.nextHopProtocol ?? "";
  return globalThis.PTR_SHARED_STREAM === true || protocol === "" || protocol.startsWith("http/1");
}

function sharedWorker() {
  if (worker !== undefined) return worker;
  try {
    worker = new SharedWorker(new URL("./stream-worker.js", import.meta.url), { name: "pull-to-refresh stream" });
    worker.port.onmessage = (message) => sources.get(message.data?.session)?.receive(message.data);
    worker.port.start();
  } catch {
    worker = null;
  }
  return worker;
}

/** The stream of `session` from after `lastEventId`: an EventSource, or one that reads the
 *  shared stream and behaves like one (`readyState`, `open`, `error`, named events with
 *  `data` and `lastEventId`, `close()`). */
export function openEventStream(api, session, lastEventId, crossOrigin) {
  const shared = sharing(crossOrigin) ? sharedWorker() : null;
  if (shared) return new SharedSource(shared, new URL(api, location.href).href.replace(/\/$/, ""), session, lastEventId);
  const query = lastEventId != null ? `?lastEventId=${lastEventId}` : "";
  return new EventSource(`${api}/sessions/${session}/events${query}`, { withCredentials: crossOrigin });
}

export class SharedSource extends EventTarget {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 2;

  #worker;
  #session;
  #releaseLock = null;

  constructor(worker, api, session, lastEventId) {
    super();
    this.#worker = worker;
    this.#session = session;
    this.readyState = SharedSource.CONNECTING;
    sources.get(session)?.close();
    sources.set(session, this);
    // Held while this tab follows the session: when the tab goes, the lock goes, and the
    // worker lets the session leave the shared stream.
    const held = new Promise((resolve) => (this.#releaseLock = resolve));
    navigator.locks.request(`ptr-stream:${session}`, () => held).catch(() => {});
    worker.port.postMessage({ type: "join", api, session, lastEventId: lastEventId != null ? String(lastEventId) : null });
  }

  receive(message) {
    if (this.readyState === SharedSource.CLOSED) return;
    if (message.type === "open") {
      if (this.readyState !== SharedSource.OPEN) {
        this.readyState = SharedSource.OPEN;
        this.dispatchEvent(new Event("open"));
      }
    } else if (message.type === "event") {
      this.dispatchEvent(new MessageEvent(message.name, { data: message.data, lastEventId: message.id ?? "" }));
    } else if (message.type === "error") {
      if (message.closed) this.#stop();
      else this.readyState = SharedSource.CONNECTING;
      this.dispatchEvent(new Event("error"));
    }
  }

  #stop() {
    this.readyState = SharedSource.CLOSED;
    this.#releaseLock?.();
    if (sources.get(this.#session) === this) sources.delete(this.#session);
  }

  close() {
    if (this.readyState === SharedSource.CLOSED) return;
    this.#worker.port.postMessage({ type: "leave", session: this.#session });
    this.#stop();
  }
}
