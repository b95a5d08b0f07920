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

/** How many sample requests may be out at once, paced (see SampleQueue, rule 1). Over
 *  HTTP/1.1 a page has six connections to an origin and the event stream holds one: three
 *  paced samples leave one for a sample that crosses a threshold and one for the release,
 *  which both go out at once, so none of them ever waits in the browser's own queue for a
 *  connection (docs/page.md, "On a slow network"). */
export const MAX_IN_FLIGHT = 3;

/** An edge's threshold for a viewport `viewportHeight` pixels tall, as the engine computes
 *  it: a number is itself; `"fit"` is 20 % of the viewport, at most 148 and at least 64, and
 *  148 while the height is not known yet (`RefreshConfig.Threshold` in Swift). */
export function thresholdInForce(threshold, viewportHeight) {
  if (threshold !== "fit") return threshold;
  if (viewportHeight == null) return 148;
  return Math.min(148, Math.max(64, viewportHeight * 0.2));
}

/** Which side of a threshold a position is on, as the server will judge it from the
 *  session's config: the sample that lands on the other side of one than the sample before
 *  it is the one whose answer changes the label (or, with the `cross` trigger, starts the
 *  action), so it is the one sample worth sending without waiting for its turn (SampleQueue,
 *  rule 5). This decides only when a sample goes out: what the page shows is still the
 *  server's answer, and a wrong guess here costs a request sent early, nothing else. The
 *  Swift client's `ThresholdWatch` is the same rule, held to it by the same table. */
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
    if (top?.enabled && -offset >= thresholdInForce(top.threshold, this.#viewportHeight)) side = "top";
    else if (bottom?.enabled && maxY > 0 && offset - maxY >= thresholdInForce(bottom.threshold, this.#viewportHeight)) side = "bottom";
    const crossed = side !== this.#side;
    this.#side = side;
    return crossed;
  }
}

/** One frame at 60 Hz: samples go out no more often than the screen changes. */
const FRAME_MS = 1000 / 60;

/** The page's own clock and timers; a test gives the queue one it drives by hand. */
const PAGE_CLOCK = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (timer) => clearTimeout(timer),
};

/** Heights are sent only when they change: a sample that takes another's place keeps the
 *  heights it does not give itself, or the server would never learn them. */
function inheritHeights(entry, replaced) {
  const heights = {};
  if (entry.sample.contentHeight == null && replaced.sample.contentHeight != null) heights.contentHeight = replaced.sample.contentHeight;
  if (entry.sample.viewportHeight == null && replaced.sample.viewportHeight != null) heights.viewportHeight = replaced.sample.viewportHeight;
  if (Object.keys(heights).length > 0) entry.sample = { ...entry.sample, ...heights };
}

/** Posts samples in order, pipelined, so that a pull reaches the server at frame rate, or as
 *  near as the round trip allows, instead of once per round trip. The rule is the Swift
 *  client's too, stated in `Sources/RefreshClient/SampleQueue.swift`; the same numbers, in
 *  brief (one table of cases, `Tests/fixtures/sample-queue-cases.json`, holds both to it):
 *
 *  1. Slots: up to `maxInFlight` (3) paced requests out at once, one crossing request and
 *     one release request.
 *  2. Pacing: a paced request goes out one spacing after the last request of any slot (a
 *     frame, or the round trip divided by `maxInFlight` when that is longer), or at once when
 *     that is past; the round trip moves a quarter of the way to each request taken.
 *  3. Replacement: a newer drag or scroll sample replaces a queued one, keeping the heights
 *     it does not give itself.
 *  4. Release: it replaces every queued position (keeping their heights) and goes out at
 *     once in the release slot, with what is pushed after it in the same task; a second
 *     release, and positions pushed while one is out, wait for its answer.
 *  5. Crossing: a position on the other side of a threshold (`ThresholdWatch`) goes out at
 *     once, in the crossing slot, or while that is out, in a free paced one.
 *  6. Refusal: a request not taken now puts back its releases, and its position while that
 *     is still the newest pushed; a refused crossing is still one. Nothing goes out until
 *     the wait is over; a later refusal may lengthen it, never shorten it.
 *  7. Numbering: `seq` strictly increases in the order samples leave, for the queue's whole
 *     life; samples put back take new ones, in the order they were pushed.
 *  8. Reset: a new session drops what is queued, the timers and the pause, and forgets the
 *     requests out (their answers are ignored, their slots free); the numbering goes on. */
export class SampleQueue {
  /** The queued line: each sample with the order it was pushed in, which putting it back
   *  does not change (its `seq` it does). */
  #queue = [];
  /** The line holds a crossing: its next request goes without waiting for its turn. */
  #crossing = false;
  /** Requests out, by slot. */
  #paced = 0;
  #crossingOut = false;
  #releaseOut = false;
  /** When the last request went out, and the timer for the next when it is too soon. */
  #lastSent = -Infinity;
  #timer = null;
  /** The round trip of a sample request, smoothed over the last few. */
  #roundTrip = 0;
  #urgent = false;
  /** The wait a refusal asked for, and when it ends. */
  #pause = null;
  #pauseEnds = -Infinity;
  #seq = 0;
  #pushed = 0;
  /** Which session the queued samples belong to: a sample sent for an earlier one is
   *  never put back in line, and its answer frees no slot. */
  #generation = 0;
  #watch;
  #clock;

  /** @param {(samples: object[], slot: string) => Promise<number|undefined>} send  posts one
   *  request ("paced", "crossing" or "release"); resolves to a number of milliseconds when
   *  the server could not take the samples now: the queue waits that long, then sends them
   *  again unless newer ones replaced them.
   *  @param {object} [options]
   *  @param {number} [options.maxInFlight]  paced requests out at once (MAX_IN_FLIGHT)
   *  @param {object} [options.config]  the session's config: where its thresholds are
   *  @param {{now: () => number, setTimeout: Function, clearTimeout: Function}} [options.clock]
   *  the clock and timers, the page's own unless a test drives them. */
  constructor(send, { maxInFlight = MAX_IN_FLIGHT, config = null, clock = PAGE_CLOCK } = {}) {
    this.send = send;
    this.maxInFlight = maxInFlight;
    this.#clock = clock;
    this.#watch = new ThresholdWatch(config);
  }

  /** Nothing queued and nothing out: every sample pushed was taken (or dropped with its
   *  session). */
  get isEmpty() {
    return this.#queue.length === 0 && this.#paced === 0 && !this.#crossingOut && !this.#releaseOut;
  }

  /** A new session, with its `config` (rule 8). */
  reset(config = null) {
    this.#queue = [];
    this.#crossing = false;
    this.#paced = 0;
    this.#crossingOut = false;
    this.#releaseOut = false;
    this.#generation++;
    this.#watch = new ThresholdWatch(config);
    this.#clock.clearTimeout(this.#pause);
    this.#pause = null;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Queues a sample; answers the `seq` it carries, which the state that answers it (or a
   *  later one) carries too. */
  push(sample) {
    const entry = { sample: { ...sample, seq: ++this.#seq, t: Math.round(this.#clock.now()) }, pushed: ++this.#pushed };
    const crosses = this.#watch.crosses(sample);
    if (sample.phase === "release") {
      for (const replaced of this.#queue) if (replaced.sample.phase !== "release") inheritHeights(entry, replaced);
      this.#queue = this.#queue.filter((queued) => queued.sample.phase === "release");
      this.#queue.push(entry);
    } else {
      const last = this.#queue[this.#queue.length - 1];
      if (last && last.sample.phase !== "release") {
        inheritHeights(entry, last);
        this.#queue[this.#queue.length - 1] = entry;
      } else {
        this.#queue.push(entry);
      }
      if (crosses) this.#crossing = true;
    }
    this.#schedule();
    return entry.sample.seq;
  }

  /** The slot the queue's next request may take now, if any: a release's, the crossing's,
   *  or a paced one (whose turn may still have to come). Nothing overtakes a release. */
  #slot() {
    if (this.#queue.some((queued) => queued.sample.phase === "release")) return this.#releaseOut ? null : "release";
    if (this.#releaseOut) return null;
    if (this.#crossing && !this.#crossingOut) return "crossing";
    return this.#paced < this.maxInFlight ? "paced" : null;
  }

  /** The next request: at the end of this task when a slot is free and, for a paced one,
   *  its turn has come; else once both hold (an answer coming back frees its slot). */
  #schedule() {
    if (this.#pause || this.#queue.length === 0) return;
    const slot = this.#slot();
    if (slot === null) return;
    if (slot !== "paced" || this.#crossing) return this.#sendSoon();
    if (this.#timer) return;
    const spacing = Math.max(FRAME_MS, this.#roundTrip / this.maxInFlight);
    const wait = this.#lastSent + spacing - this.#clock.now();
    if (wait <= 0) return this.#sendSoon();
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = null;
      this.#schedule();
    }, wait);
  }

  /** At the end of this task, so that what is posted in the same task goes with it: a
   *  release does not wait for a frame. */
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

  #take(slot, taken) {
    if (slot === "paced") this.#paced += taken ? 1 : -1;
    else if (slot === "crossing") this.#crossingOut = taken;
    else this.#releaseOut = taken;
  }

  async #flush(slot) {
    const batch = this.#queue;
    const crossing = this.#crossing;
    this.#queue = [];
    this.#crossing = false;
    const generation = this.#generation;
    this.#take(slot, true);
    const sent = this.#clock.now();
    this.#lastSent = sent;
    try {
      const wait = await this.send(batch.map((entry) => entry.sample), slot);
      if (generation !== this.#generation) return;
      if (wait == null) {
        this.#roundTrip += (this.#clock.now() - sent - this.#roundTrip) / 4;
        return;
      }
      this.#putBack(batch);
      // A crossing turned away is still a crossing: once the wait is over it goes first,
      // in its own slot, not behind the paced ones.
      if (crossing && this.#queue.length > 0) this.#crossing = true;
      this.#pauseFor(wait);
    } finally {
      // An answer for an earlier session frees nothing: its slots went with it.
      if (generation === this.#generation) {
        this.#take(slot, false);
        this.#schedule();
      }
    }
  }

  /** Nothing goes out for `wait` ms; a pause already longer stays as it is. */
  #pauseFor(wait) {
    const ends = this.#clock.now() + wait;
    if (this.#pause && ends <= this.#pauseEnds) return;
    this.#clock.clearTimeout(this.#pause);
    this.#clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.#pauseEnds = ends;
    this.#pause = this.#clock.setTimeout(() => {
      this.#pause = null;
      this.#schedule();
    }, wait);
  }

  /** In line again: a release always; a drag or scroll sample only while it is still the
   *  newest sample pushed (one pushed since, queued or sent, supersedes it: a position sent
   *  again after a newer one would move the list back, and the next in line keeps its
   *  heights). The line keeps the order of pushing, and every sample in it takes a new
   *  `seq` in that order: samples sent meanwhile are newer than the ones put back, and the
   *  server would ignore those. */
  #putBack(batch) {
    const newest = this.#pushed;
    const keeps = (entry) => entry.sample.phase === "release" || entry.pushed === newest;
    const line = [...batch.filter(keeps), ...this.#queue].sort((a, b) => a.pushed - b.pushed);
    for (const dropped of batch) {
      if (keeps(dropped)) continue;
      const next = line.find((entry) => entry.pushed > dropped.pushed);
      if (next) inheritHeights(next, dropped);
    }
    this.#queue = line.map((entry) => ({ sample: { ...entry.sample, seq: ++this.#seq }, pushed: entry.pushed }));
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
    this.queue = new SampleQueue((samples) => this.#post(samples), { maxInFlight });
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
    // From the very first event: whatever happens before the stream connects is replayed.
    this.#lastEventId = 0;
    this.queue.reset(session.config);
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
