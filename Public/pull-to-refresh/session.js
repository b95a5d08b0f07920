// The conversation with the server: a session, its event stream, the sample queue.
// It decides nothing about gestures: it measures, posts, and hands on what the server says.
//
// A busy server is an ordinary condition, not a failure: a `429` or `503` says, in
// `Retry-After`, when to ask again, and a stream the server cannot take now is answered
// with only a `retry:` line and closed, which EventSource treats as a dropped connection.
// So every request here waits as asked and tries again where trying again makes sense,
// and nothing short of a request the server can never accept leaves the page dead.

/** The longest wait before asking again, whatever the server or the backoff says. */
const MAX_WAIT_MS = 30_000;
/** The first wait after a failure that came without `Retry-After`; it doubles from there. */
const FIRST_BACKOFF_MS = 1000;
/** A stream counts as open once it has brought an event or stayed up this long: a server
 *  too busy for another stream also answers `200`, but closes at once. */
const OPEN_CONFIRM_MS = 1000;

/** Statuses after which the same request may succeed later. */
function isTransient(status) {
  return status === 408 || status === 429 || status >= 500;
}

/** Milliseconds the server asked for in `Retry-After` (seconds or an HTTP date), if any. */
function retryAfterMs(reply) {
  const value = reply?.headers.get("Retry-After")?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

/** How long to wait before asking again: what `reply` asked for, else `fallback` ms, and
 *  then up to a fifth more at random (up to a quarter second for short waits), so that the
 *  pages a busy server turned away in the same instant do not all come back in the same
 *  instant. The base is capped at five sixths of MAX_WAIT_MS, so the whole is at most that. */
export function retryDelay(reply, fallback = FIRST_BACKOFF_MS) {
  const base = Math.min(retryAfterMs(reply) ?? fallback, (MAX_WAIT_MS * 5) / 6);
  return Math.round(base + Math.random() * Math.max(base / 5, 250));
}

/** Resolves after `ms`, or as soon as `signal` aborts: a closed session waits for nothing. */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    signal.addEventListener("abort", wake);
  });
}

/** A request the server refused or could not be sent, with the server's own words. */
export class RequestError extends Error {
  /** @param {number} status  the HTTP status, 0 when the server could not be reached */
  constructor(status, message) {
    super(message);
    this.name = "RequestError";
    this.status = status;
  }

  static async from(reply) {
    let message = `the server answered ${reply.status}`;
    try {
      const body = await reply.json();
      if (typeof body?.message === "string") message = body.message;
    } catch {
      // Not the JSON error body: the status says enough.
    }
    return new RequestError(reply.status, message);
  }

  static unreachable() {
    return new RequestError(0, "the server cannot be reached");
  }
}

/** Posts samples in order: at most one request in flight and one per animation frame.
 *  A newer drag or scroll sample replaces a queued one; a release is never dropped, not
 *  even when the server turns it away for a while. */
export class SampleQueue {
  #queue = [];
  #inFlight = false;
  #frameRequested = false;
  #pause = null;
  #seq = 0;
  /** Which session the queued samples belong to: a sample sent for an earlier one is
   *  never put back in line, and a wait it was told to keep ends with it. */
  #generation = 0;

  /** @param {(sample: object) => Promise<number|undefined>} send  resolves to a number of
   *  milliseconds when the server could not take the sample now: the queue waits that
   *  long, then sends it again unless a newer one replaced it. */
  constructor(send) {
    this.send = send;
  }

  reset() {
    this.#queue = [];
    this.#seq = 0;
    this.#generation++;
    clearTimeout(this.#pause);
    this.#pause = null;
  }

  push(sample) {
    const entry = { ...sample, seq: ++this.#seq, t: Math.round(performance.now()) };
    const last = this.#queue[this.#queue.length - 1];
    if (last && last.phase !== "release" && entry.phase !== "release") {
      this.#queue[this.#queue.length - 1] = entry;
    } else {
      this.#queue.push(entry);
    }
    this.#schedule();
  }

  #schedule() {
    if (this.#frameRequested || this.#inFlight || this.#pause || this.#queue.length === 0) return;
    this.#frameRequested = true;
    requestAnimationFrame(() => {
      this.#frameRequested = false;
      this.#flush();
    });
  }

  async #flush() {
    if (this.#inFlight || this.#pause || this.#queue.length === 0) return;
    const sample = this.#queue.shift();
    const generation = this.#generation;
    this.#inFlight = true;
    try {
      const wait = await this.send(sample);
      if (wait != null && generation === this.#generation) {
        this.#putBack(sample);
        this.#pause = setTimeout(() => {
          this.#pause = null;
          this.#schedule();
        }, wait);
      }
    } finally {
      this.#inFlight = false;
      this.#schedule();
    }
  }

  /** First in line again, keeping `seq` order: a release always; a drag or scroll sample
   *  only while it is still the newest position, as `push` would have kept it (nothing
   *  queued after it, or a release next). */
  #putBack(sample) {
    const next = this.#queue[0];
    if (sample.phase === "release" || !next || next.phase === "release") this.#queue.unshift(sample);
  }
}

/** A session on the server and its event stream, recreated transparently when the
 *  server has forgotten it, and waited for when the server is busy. Emits `open`, `state`,
 *  `progress`, `items`, `done`, `news`, `reset`, `session` (a new session replaced the old),
 *  `error` (a new session could not be had: detail is the error) and `connection`:
 *  detail "connecting" (a session is being created), "open" (the stream is up) or "lost"
 *  (an attempt failed; it fires for every failed attempt while the page tries again). */
export class RefreshSession extends EventTarget {
  #source = null;
  #lastEventId = null;
  #retryTimer = null;
  #confirmTimer = null;
  #resumeBackoff = FIRST_BACKOFF_MS;
  #sampleBackoff = FIRST_BACKOFF_MS;
  #connection = null;
  #opening = null;
  #replacing = null;
  #closed = false;
  /** Aborted by `close()`: ends every wait of a retry loop at once. */
  #stopping = new AbortController();

  /** @param {object} options
   *  @param {() => ({head: number, pagedThrough: number, oldest: string} | null)} [options.shows]  what the page's
   *  list shows; a session that replaces a lost one is asked to continue it. */
  constructor({ api = "/api", preset = "default", config, shows = () => null } = {}) {
    super();
    this.api = api;
    this.preset = preset;
    this.overrides = config;
    this.shows = shows;
    this.id = null;
    this.config = null;
    this.queue = new SampleQueue((sample) => this.#post(sample));
  }

  /** Creates the session and follows its stream. A busy or unreachable server is asked
   *  again (as its `Retry-After` says, else with a growing backoff) until it answers; the
   *  promise rejects only when the server refuses the request itself (a `4xx`). */
  open() {
    this.#opening ??= this.#create().finally(() => (this.#opening = null));
    return this.#opening;
  }

  /** Stops for good: the stream, every timer, retry loop and queued sample, and the session
   *  on the server, which is ended with a `keepalive` request, so that it goes out even as
   *  the page unloads. A session still being created is ended as soon as it exists. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopping.abort();
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#confirmTimer);
    this.#source?.close();
    this.#source = null;
    this.queue.reset();
    if (this.id) this.#end(this.id);
  }

  /** The connection as last reported by the `connection` event. */
  get connection() {
    return this.#connection;
  }

  sample(sample) {
    if (this.id && !this.#closed) this.queue.push(sample);
  }

  refresh() {
    return this.#action("POST", "refresh");
  }

  cancelRefresh() {
    return this.#action("DELETE", "refresh");
  }

  loadMore() {
    return this.#action("POST", "load-more");
  }

  async #create() {
    const body = { preset: this.preset };
    if (this.overrides) body.config = this.overrides;
    const resume = this.shows();
    if (resume) body.resume = resume;
    this.#report("connecting");
    let backoff = FIRST_BACKOFF_MS;
    for (;;) {
      if (this.#closed) throw new Error("the session was closed");
      let reply = null;
      let session = null;
      try {
        reply = await this.#request("POST", "/sessions", body);
        if (reply.ok) session = await reply.json();
      } catch {
        // Offline, the server down, or an answer cut short: as busy, without a hint.
      }
      if (session && this.#closed) this.#end(session.id); // closed while it was being created
      else if (session) return this.#begin(session);
      if (this.#closed) throw new Error("the session was closed");
      if (reply && !reply.ok && !isTransient(reply.status)) throw await RequestError.from(reply);
      this.#report("lost");
      await sleep(retryDelay(reply, backoff), this.#stopping.signal);
      backoff = Math.min(backoff * 2, MAX_WAIT_MS);
    }
  }

  #begin(session) {
    this.id = session.id;
    this.config = session.config;
    // From the very first event: whatever happens before the stream connects is replayed.
    this.#lastEventId = 0;
    this.queue.reset();
    this.#resumeBackoff = FIRST_BACKOFF_MS;
    this.#sampleBackoff = FIRST_BACKOFF_MS;
    this.#listen();
    this.dispatchEvent(new CustomEvent("open", { detail: session }));
    return session;
  }

  /** An action asked for by the user or the page: a busy server is asked once more after
   *  the wait it gave. Resolves to the answer, or `null` when the server declined (a
   *  conflict, or the session was replaced meanwhile); rejects with a `RequestError`
   *  when the server stayed busy or out of reach. */
  async #action(method, name) {
    if (!this.id) return null; // still being created: its first page comes by itself
    for (let attempt = 1; ; attempt++) {
      if (this.#closed) return null;
      let reply = null;
      try {
        reply = await this.#request(method, `/sessions/${this.id}/${name}`);
      } catch {
        if (attempt > 1) throw RequestError.unreachable();
      }
      if (reply?.status === 404) {
        await this.#replace();
        return null;
      }
      if (reply?.ok) return reply.json();
      if (reply && !isTransient(reply.status)) return null;
      if (attempt > 1) throw await RequestError.from(reply);
      await sleep(retryDelay(reply), this.#stopping.signal);
    }
  }

  /** One sample; a number is how long the queue waits before sending it again. */
  async #post(sample) {
    let reply;
    try {
      reply = await this.#request("POST", `/sessions/${this.id}/samples`, sample);
    } catch {
      return retryDelay(null, this.#growSampleBackoff());
    }
    if (reply.status === 404) {
      await this.#replace();
      return undefined;
    }
    if (isTransient(reply.status)) return retryDelay(reply, this.#growSampleBackoff());
    // Taken, or refused for good (a bad sample is not better the second time).
    this.#sampleBackoff = FIRST_BACKOFF_MS;
    return undefined;
  }

  /** Ends the session `id` on the server; nobody waits for the answer. */
  #end(id) {
    fetch(`${this.api}/sessions/${id}`, { method: "DELETE", keepalive: true }).catch(() => {});
  }

  #growSampleBackoff() {
    const backoff = this.#sampleBackoff;
    this.#sampleBackoff = Math.min(backoff * 2, MAX_WAIT_MS);
    return backoff;
  }

  #request(method, path, body) {
    return fetch(this.api + path, {
      method,
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
  }

  /** Reports the connection; "lost" on every failed attempt, the others on change. */
  #report(connection) {
    if (connection === this.#connection && connection !== "lost") return;
    this.#connection = connection;
    this.dispatchEvent(new CustomEvent("connection", { detail: connection }));
  }

  #listen() {
    this.#source?.close();
    clearTimeout(this.#confirmTimer);
    const query = this.#lastEventId != null ? `?lastEventId=${this.#lastEventId}` : "";
    const source = new EventSource(`${this.api}/sessions/${this.id}/events${query}`);
    this.#source = source;
    const confirm = () => {
      clearTimeout(this.#confirmTimer);
      if (this.#source !== source) return;
      this.#resumeBackoff = FIRST_BACKOFF_MS;
      this.#report("open");
    };
    for (const name of ["state", "progress", "items", "done", "news", "reset"]) {
      source.addEventListener(name, (event) => {
        confirm();
        if (event.lastEventId) this.#lastEventId = event.lastEventId;
        this.dispatchEvent(new CustomEvent(name, { detail: JSON.parse(event.data) }));
      });
    }
    source.addEventListener("open", () => {
      // A busy server's `200` ends at once; only a stream that stays up is open.
      clearTimeout(this.#confirmTimer);
      this.#confirmTimer = setTimeout(confirm, OPEN_CONFIRM_MS);
    });
    source.addEventListener("error", () => {
      if (this.#source !== source) return;
      clearTimeout(this.#confirmTimer);
      this.#report("lost");
      // EventSource retries by itself after a dropped connection, and after a busy server's
      // `retry:` answer, when it is told to; after a refused one (server down, session gone,
      // a proxy's 503) it gives up, and so we take over.
      if (source.readyState === EventSource.CLOSED && !this.#closed) this.#retryLater(null);
    });
  }

  /** Resumes after `reply`'s `Retry-After`, else after a backoff that doubles until a
   *  stream stays open again. */
  #retryLater(reply) {
    clearTimeout(this.#retryTimer);
    const delay = retryDelay(reply, this.#resumeBackoff);
    this.#resumeBackoff = Math.min(this.#resumeBackoff * 2, MAX_WAIT_MS);
    this.#retryTimer = setTimeout(() => this.#resume(), delay);
  }

  /** Is the session still there? Then follow its stream again, from the last event seen. */
  async #resume() {
    if (this.#closed) return;
    let reply = null;
    try {
      reply = await this.#request("GET", `/sessions/${this.id}`);
    } catch {
      // Still offline: try again later.
    }
    if (this.#closed) return;
    if (reply?.status === 404) return void this.#replace();
    if (reply?.ok) return void this.#listen();
    this.#report("lost");
    this.#retryLater(reply);
  }

  /** The server forgot the session (restart, expiry, its instance gone): start a new one,
   *  which continues the list when the server can (the `session` event says `resumed`). */
  #replace() {
    if (this.#closed) return Promise.resolve();
    if (this.#replacing) return this.#replacing;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#confirmTimer);
    this.#source?.close();
    this.#replacing = this.open()
      .then((session) => this.dispatchEvent(new CustomEvent("session", { detail: session })))
      .catch((error) => {
        if (!this.#closed) this.dispatchEvent(new CustomEvent("error", { detail: error }));
      })
      .finally(() => (this.#replacing = null));
    return this.#replacing;
  }
}
