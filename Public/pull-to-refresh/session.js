// The conversation with the server: a session, its event stream, the sample queue.
// It decides nothing about gestures: it measures, posts, and hands on what the server says.
//
// A busy server is an ordinary condition, not a failure: a `429` or `503` says, in
// `Retry-After`, when to ask again, and a stream the server cannot take now is answered
// with only a `retry:` line and closed, which EventSource treats as a dropped connection.
// So every request here waits as asked and tries again where trying again makes sense,
// and nothing short of a request the server can never accept leaves the page dead.

import { openEventStream } from "./shared-source.js";

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

/** Whether `api` is on another origin than the page. A cross-origin request carries the
 *  page's cookies (the `ptr_token` the application sets) only when asked to, and the server
 *  must then allow credentials for the page's origin (`--cors-origin`); on the page's own
 *  origin the defaults send them already and ask nothing of the server. */
function isCrossOrigin(api) {
  try {
    return new URL(api, location.href).origin !== location.origin;
  } catch {
    return false;
  }
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

/** How many sample requests may be out at once, paced (see SampleQueue). Over HTTP/1.1 a
 *  page has six connections to an origin and the event stream holds one: three paced
 *  samples leave one for a sample that crosses a threshold and one for the release, which
 *  both go out at once, so none of them ever waits in the browser's own queue for a
 *  connection (docs/page.md, "On a slow network"). */
export const MAX_IN_FLIGHT = 3;

/** Which side of a threshold a position is on, as the server will judge it from the
 *  session's config: the sample that lands on the other side of one than the sample before
 *  it is the one whose answer changes the label (or, with the `cross` trigger, starts the
 *  action), so it is the one sample worth sending without waiting for its turn. This
 *  decides only when a sample goes out: what the page shows is still the server's answer,
 *  and a wrong guess here costs a request sent early, nothing else. */
export class ThresholdWatch {
  #config;
  #baseline = null;
  #contentHeight = null;
  #viewportHeight = null;
  #side = "under";

  /** @param {object} config  the session's config, as the server answered it */
  constructor(config) {
    this.#config = config ?? {};
  }

  /** Whether `sample` is past a threshold the sample before it was not past, or back under
   *  one it was past; every sample is noted, the release too. */
  crosses(sample) {
    const { top, bottom, baseline } = this.#config;
    // As the server does: with `firstSample`, the rest position is the first offset it saw.
    this.#baseline ??= baseline === "firstSample" ? sample.y : 0;
    this.#contentHeight = sample.contentHeight ?? this.#contentHeight;
    this.#viewportHeight = sample.viewportHeight ?? this.#viewportHeight;
    const offset = sample.y - this.#baseline;
    const maxY = this.#contentHeight != null && this.#viewportHeight != null ? this.#contentHeight - this.#viewportHeight : 0;
    let side = "under";
    if (top?.enabled && -offset >= top.threshold) side = "top";
    else if (bottom?.enabled && maxY > 0 && offset - maxY >= bottom.threshold) side = "bottom";
    const crossed = side !== this.#side;
    this.#side = side;
    return crossed;
  }
}

/** One frame at 60 Hz: samples go out no more often than the screen changes. */
const FRAME_MS = 1000 / 60;

/** Posts samples in order, pipelined: up to MAX_IN_FLIGHT requests out at once, so that a
 *  pull reaches the server at frame rate, or as near as the round trip allows, instead of
 *  once per round trip. Requests go out evenly, one per frame or one per round trip divided
 *  by MAX_IN_FLIGHT, whichever is longer, each as soon as that allows: so the newest position
 *  never waits longer than that for its turn (a burst of requests would leave it a gap of
 *  most of a round trip). The server applies samples by `seq` and ignores one older than
 *  what it has, so requests may overtake each other on their way.
 *
 *  A sample that crosses a threshold (`crosses` says which) does not wait for its turn: it
 *  goes out at once in a slot of its own beside the paced ones, or, while that one is still
 *  out, in the next paced slot free, so that the label it changes is one round trip away
 *  from the crossing on screen, not that plus a wait.
 *
 *  A newer drag or scroll sample replaces a queued one. A release replaces every queued
 *  position (it carries its own offset) and goes out at once, with whatever is posted in the
 *  same task (where the list rests after it) in the same request; it is never dropped, not
 *  even when the server turns it away for a while. A refused request stops the queue for as
 *  long as the server asked. */
export class SampleQueue {
  #queue = [];
  /** Paced requests out, and whether the crossing's own slot is taken (a release takes
   *  none: it always goes). */
  #paced = 0;
  #crossingOut = false;
  /** A sample that crosses a threshold is queued: the next request goes without its turn. */
  #hurry = false;
  /** When the last request went out, and the timer for the next when it is too soon. */
  #lastSent = -Infinity;
  #timer = null;
  /** The round trip of a sample request, smoothed over the last few. */
  #roundTrip = 0;
  #urgent = false;
  #pause = null;
  #seq = 0;
  /** Which session the queued samples belong to: a sample sent for an earlier one is
   *  never put back in line, and a wait it was told to keep ends with it. */
  #generation = 0;

  /** @param {(samples: object[]) => Promise<number|undefined>} send  posts one request;
   *  resolves to a number of milliseconds when the server could not take the samples now:
   *  the queue waits that long, then sends them again unless newer ones replaced them.
   *  @param {object} [options]
   *  @param {number} [options.maxInFlight]  paced requests out at once (MAX_IN_FLIGHT)
   *  @param {(sample: object) => boolean} [options.crosses]  told of every sample pushed, in
   *  order: whether it crosses a threshold (a ThresholdWatch's `crosses`). */
  constructor(send, { maxInFlight = MAX_IN_FLIGHT, crosses = () => false } = {}) {
    this.send = send;
    this.maxInFlight = maxInFlight;
    this.crosses = crosses;
  }

  reset() {
    this.#queue = [];
    this.#seq = 0;
    this.#hurry = false;
    this.#generation++;
    clearTimeout(this.#pause);
    this.#pause = null;
    clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Queues a sample; answers the `seq` it carries, which the state that answers it (or a
   *  later one) carries too. */
  push(sample) {
    const entry = { ...sample, seq: ++this.#seq, t: Math.round(performance.now()) };
    const crosses = this.crosses(sample);
    if (entry.phase === "release") {
      this.#queue = this.#queue.filter((queued) => queued.phase === "release");
      this.#queue.push(entry);
      this.#sendSoon();
      return entry.seq;
    }
    const last = this.#queue[this.#queue.length - 1];
    if (last && last.phase !== "release") this.#queue[this.#queue.length - 1] = entry;
    else this.#queue.push(entry);
    if (crosses) this.#hurry = true;
    this.#schedule();
    return entry.seq;
  }

  /** The slot the queue's next request may take now, if any: a release's, the crossing's,
   *  or a paced one (whose turn may still have to come). */
  #slot() {
    if (this.#queue.some((queued) => queued.phase === "release")) return "release";
    if (this.#hurry && !this.#crossingOut) return "crossing";
    return this.#paced < this.maxInFlight ? "paced" : null;
  }

  /** The next request: at the end of this task when a slot is free and, for a paced one,
   *  its turn has come; else once both hold (an answer coming back frees its slot). */
  #schedule() {
    if (this.#pause || this.#queue.length === 0) return;
    const slot = this.#slot();
    if (slot === null) return;
    if (slot !== "paced" || this.#hurry) return this.#sendSoon();
    if (this.#timer) return;
    const spacing = Math.max(FRAME_MS, this.#roundTrip / this.maxInFlight);
    const wait = this.#lastSent + spacing - performance.now();
    if (wait <= 0) return this.#sendSoon();
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#schedule();
    }, wait);
  }

  /** At the end of this task, so that what is posted in the same task goes with it: a
   *  release does not wait for a frame or a free slot. */
  #sendSoon() {
    if (this.#urgent || this.#pause) return;
    this.#urgent = true;
    queueMicrotask(() => {
      this.#urgent = false;
      if (this.#pause || this.#queue.length === 0) return;
      const slot = this.#slot();
      if (slot !== null) this.#flush(slot);
    });
  }

  async #flush(slot) {
    const batch = this.#queue;
    const hurried = this.#hurry;
    this.#queue = [];
    this.#hurry = false;
    const generation = this.#generation;
    if (slot === "paced") this.#paced++;
    if (slot === "crossing") this.#crossingOut = true;
    const sent = performance.now();
    this.#lastSent = sent;
    try {
      const wait = await this.send(batch);
      if (wait == null) this.#roundTrip += ((performance.now() - sent) - this.#roundTrip) / 4;
      if (wait != null && generation === this.#generation) {
        this.#putBack(batch);
        // A crossing turned away is still a crossing: once the wait is over it goes first,
        // in its own slot, not behind the paced ones.
        if (hurried && this.#queue.length > 0) this.#hurry = true;
        clearTimeout(this.#pause);
        this.#pause = setTimeout(() => {
          this.#pause = null;
          this.#schedule();
        }, wait);
      }
    } finally {
      if (slot === "paced") this.#paced--;
      if (slot === "crossing") this.#crossingOut = false;
      this.#schedule();
    }
  }

  /** First in line again: a release always; a drag or scroll sample only while it is still
   *  the newest position, as `push` would have kept it (nothing queued after it). Every
   *  queued sample takes a new `seq`, in line order: samples sent meanwhile are newer than
   *  the ones put back, and the server would ignore those. */
  #putBack(batch) {
    const newerPosition = this.#queue.some((queued) => queued.phase !== "release");
    const kept = batch.filter((sample, index) => sample.phase === "release" || (!newerPosition && index === batch.length - 1));
    this.#queue = [...kept, ...this.#queue].map((sample) => ({ ...sample, seq: ++this.#seq }));
  }
}

/** A session on the server and its event stream, recreated transparently when the
 *  server has forgotten it, and waited for when the server is busy. Emits `open`, `state`,
 *  `progress`, `items`, `done`, `news`, `changes`, `reset`, `session` (a new session replaced the old),
 *  `error` (a new session could not be had: detail is the error) and `connection`:
 *  detail "connecting" (a session is being created), "open" (the stream is up) or "lost"
 *  (an attempt failed; it fires for every failed attempt while the page tries again).
 *
 *  A new session comes with the feed's first page, unless it continues the list an earlier
 *  one showed: its events are then `session` (when it replaces one), `items` (that page,
 *  with a null `actionId`) and `open`, in this order, so that a list cleared for a session
 *  that starts over is filled again at once, before the stream even connects.
 *
 *  It keeps what the list shows, as the server said (`shows`), from the `items` it hands
 *  on: a session that replaces a lost one is asked to continue that list. */
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
  /** `api` is on another origin: requests and the stream are sent with credentials. */
  #crossOrigin;
  /** Aborted by `close()`: ends every wait of a retry loop at once. */
  #stopping = new AbortController();
  /** The next session opened replaces one: it says so with `session` before its items. */
  #replaces;
  /** Which side of its thresholds the last sample was on, for the session's config. */
  #watch = null;
  /** What the list shows: the feed position its items are up to date with (`head` of the
   *  last `items` that brought it up to date), the one it started from (the first such
   *  `head`: paging down stays below it), its last item's id, and the feed's version its
   *  rows are as of (that of the last `items` or `changes`). */
  #shows = { head: null, pagedThrough: null, oldest: null, version: null };

  /** @param {object} options
   *  @param {{head: number, pagedThrough: number, oldest: string, version?: number} | null} [options.continues]  the list
   *  an earlier session showed (its `shows`): the first session is asked to continue it.
   *  @param {boolean} [options.replaces]  the first session replaces another one the page
   *  had: it is announced with `session`, as a session replacing a lost one is.
   *  @param {number} [options.maxInFlight]  paced sample requests out at once (MAX_IN_FLIGHT).
   *  @param {string} [options.feed]  the feed the session reads; absent, the server's `main`. */
  constructor({ api = "/api", feed, preset = "default", config, continues = null, replaces = false, maxInFlight } = {}) {
    super();
    this.api = api;
    this.#crossOrigin = isCrossOrigin(api);
    this.feed = feed;
    this.preset = preset;
    this.overrides = config;
    if (continues) this.#shows = { ...continues };
    this.#replaces = replaces;
    this.id = null;
    this.config = null;
    this.queue = new SampleQueue((samples) => this.#post(samples), {
      maxInFlight,
      crosses: (sample) => this.#watch?.crosses(sample) ?? false,
    });
  }

  /** What the list shows, for a later session to continue; null while it shows nothing the
   *  server could continue. */
  get shows() {
    if (this.#shows.head == null || this.#shows.oldest == null) return null;
    const { version, ...shows } = this.#shows;
    return version != null ? { ...shows, version } : shows;
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

  /** Posts a sample (`{y, phase, contentHeight?, viewportHeight?}`); answers its `seq`,
   *  or null when there is no session to post it to. */
  sample(sample) {
    return this.id && !this.#closed ? this.queue.push(sample) : null;
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
    const body = { preset: this.preset, firstPage: true };
    if (this.feed) body.feed = this.feed;
    if (this.overrides) body.config = this.overrides;
    const resume = this.shows;
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
    this.#watch = new ThresholdWatch(session.config);
    // From the very first event: whatever happens before the stream connects is replayed.
    this.#lastEventId = 0;
    this.queue.reset();
    this.#resumeBackoff = FIRST_BACKOFF_MS;
    this.#sampleBackoff = FIRST_BACKOFF_MS;
    this.#listen();
    if (this.#replaces) this.dispatchEvent(new CustomEvent("session", { detail: session }));
    this.#replaces = false;
    if (!session.resumed) this.#shows = { head: null, pagedThrough: null, oldest: null, version: null };
    if (session.firstPage) {
      this.#handOn("items", { actionId: null, op: "append", ...session.firstPage });
    }
    this.dispatchEvent(new CustomEvent("open", { detail: session }));
    return session;
  }

  /** An event for the page; what the list shows is noted first. */
  #handOn(name, detail) {
    if (name === "items") {
      const { op, items, head } = detail;
      if (head != null) {
        this.#shows.head = head;
        this.#shows.pagedThrough ??= head;
      }
      if (items.length > 0 && (op === "append" || this.#shows.oldest == null)) this.#shows.oldest = items[items.length - 1].id;
      if (detail.version != null) this.#shows.version = detail.version;
    } else if (name === "changes") {
      this.#shows.version = detail.version;
    } else if (name === "reset") {
      this.#shows = { head: null, pagedThrough: null, oldest: null, version: null };
    }
    this.dispatchEvent(new CustomEvent(name, { detail }));
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

  /** One request of samples; a number is how long the queue waits before sending them again. */
  async #post(samples) {
    let reply;
    try {
      const body = samples.length === 1 ? samples[0] : { samples };
      reply = await this.#request("POST", `/sessions/${this.id}/samples`, body);
      // Read to the end, so that its connection is free again when its slot is (the state
      // in it comes on the stream too).
      await reply.arrayBuffer();
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
    fetch(`${this.api}/sessions/${id}`, { method: "DELETE", keepalive: true, credentials: this.#credentials }).catch(() => {});
  }

  #growSampleBackoff() {
    const backoff = this.#sampleBackoff;
    this.#sampleBackoff = Math.min(backoff * 2, MAX_WAIT_MS);
    return backoff;
  }

  get #credentials() {
    return this.#crossOrigin ? "include" : "same-origin";
  }

  #request(method, path, body) {
    return fetch(this.api + path, {
      method,
      credentials: this.#credentials,
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
    const source = openEventStream(this.api, this.id, this.#lastEventId, this.#crossOrigin);
    this.#source = source;
    const confirm = () => {
      clearTimeout(this.#confirmTimer);
      if (this.#source !== source) return;
      this.#resumeBackoff = FIRST_BACKOFF_MS;
      this.#report("open");
    };
    for (const name of ["state", "progress", "items", "done", "news", "changes", "reset"]) {
      source.addEventListener(name, (event) => {
        confirm();
        if (event.lastEventId) this.#lastEventId = event.lastEventId;
        this.#handOn(name, JSON.parse(event.data));
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
    this.#replaces = true;
    this.#replacing = this.open()
      .catch((error) => {
        if (!this.#closed) this.dispatchEvent(new CustomEvent("error", { detail: error }));
      })
      .finally(() => (this.#replacing = null));
    return this.#replacing;
  }
}
