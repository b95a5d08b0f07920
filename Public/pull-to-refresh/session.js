// The conversation with the server: a session, its event stream, the sample queue.
// It decides nothing about gestures: it measures, posts, and hands on what the server says.

/** Posts samples in order: at most one request in flight and one per animation frame.
 *  A newer drag or scroll sample replaces a queued one; a release is never dropped. */
export class SampleQueue {
  #queue = [];
  #inFlight = false;
  #frameRequested = false;
  #seq = 0;

  /** @param {(sample: object) => Promise<void>} send */
  constructor(send) {
    this.send = send;
  }

  reset() {
    this.#queue = [];
    this.#seq = 0;
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
    if (this.#frameRequested || this.#inFlight || this.#queue.length === 0) return;
    this.#frameRequested = true;
    requestAnimationFrame(() => {
      this.#frameRequested = false;
      this.#flush();
    });
  }

  async #flush() {
    if (this.#inFlight || this.#queue.length === 0) return;
    const sample = this.#queue.shift();
    this.#inFlight = true;
    try {
      await this.send(sample);
    } finally {
      this.#inFlight = false;
      this.#schedule();
    }
  }
}

/** A session on the server and its event stream, recreated transparently when the
 *  server has forgotten it. Emits `open`, `state`, `progress`, `items`, `done`, `reset`,
 *  `connection` (detail: "open" | "lost") and `session` (a new session replaced the old). */
export class RefreshSession extends EventTarget {
  #source = null;
  #lastEventId = null;
  #retryTimer = null;
  #closed = false;

  constructor({ api = "/api", preset = "default", config } = {}) {
    super();
    this.api = api;
    this.preset = preset;
    this.overrides = config;
    this.id = null;
    this.config = null;
    this.queue = new SampleQueue((sample) => this.#post(sample));
  }

  async open() {
    const body = { preset: this.preset };
    if (this.overrides) body.config = this.overrides;
    const reply = await this.#request("POST", "/sessions", body);
    if (!reply.ok) throw new Error(`could not create a session: ${reply.status}`);
    const session = await reply.json();
    this.id = session.id;
    this.config = session.config;
    // From the very first event: whatever happens before the stream connects is replayed.
    this.#lastEventId = 0;
    this.queue.reset();
    this.#listen();
    this.dispatchEvent(new CustomEvent("open", { detail: session }));
    return session;
  }

  close() {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#source?.close();
  }

  sample(sample) {
    if (this.id) this.queue.push(sample);
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

  async #action(method, name) {
    const reply = await this.#request(method, `/sessions/${this.id}/${name}`);
    if (reply.status === 404) return this.#replace();
    return reply.ok ? reply.json() : null;
  }

  async #post(sample) {
    try {
      const reply = await this.#request("POST", `/sessions/${this.id}/samples`, sample);
      if (reply.status === 404) await this.#replace();
      else if (reply.status === 429) {
        const wait = Number(reply.headers.get("Retry-After") || 1) * 1000;
        await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 2000)));
      }
    } catch {
      // Offline: the sample is stale by the time the network is back; the next one counts.
    }
  }

  #request(method, path, body) {
    return fetch(this.api + path, {
      method,
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
  }

  #listen() {
    this.#source?.close();
    const query = this.#lastEventId != null ? `?lastEventId=${this.#lastEventId}` : "";
    const source = new EventSource(`${this.api}/sessions/${this.id}/events${query}`);
    this.#source = source;
    for (const name of ["state", "progress", "items", "done", "reset"]) {
      source.addEventListener(name, (event) => {
        if (event.lastEventId) this.#lastEventId = event.lastEventId;
        this.dispatchEvent(new CustomEvent(name, { detail: JSON.parse(event.data) }));
      });
    }
    source.addEventListener("open", () => {
      this.dispatchEvent(new CustomEvent("connection", { detail: "open" }));
    });
    source.addEventListener("error", () => {
      this.dispatchEvent(new CustomEvent("connection", { detail: "lost" }));
      // EventSource retries by itself after a dropped connection; after a refused one
      // (server down, session gone) it gives up, and so we take over.
      if (source.readyState === EventSource.CLOSED && !this.#closed) this.#retryLater(1000);
    });
  }

  #retryLater(delay) {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => this.#resume(delay), delay);
  }

  async #resume(delay) {
    try {
      const reply = await this.#request("GET", `/sessions/${this.id}`);
      if (reply.status === 404) return void (await this.#replace());
      if (!reply.ok) throw new Error(String(reply.status));
      this.#listen();
    } catch {
      this.#retryLater(Math.min(delay * 2, 10000));
    }
  }

  /** The server forgot the session (restart, expiry): start a new one; the list restarts. */
  async #replace() {
    if (this.#replacing) return this.#replacing;
    this.#replacing = this.open()
      .then((session) => this.dispatchEvent(new CustomEvent("session", { detail: session })))
      .catch(() => this.#retryLater(2000))
      .finally(() => (this.#replacing = null));
    return this.#replacing;
  }

  #replacing = null;
}
