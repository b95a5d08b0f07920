// <pull-to-refresh>: wraps a list, captures the gesture, posts samples and draws exactly
// what the server says. Drop it into any page:
//
//   <script type="module" src="/pull-to-refresh/element.js"></script>
//   <pull-to-refresh preset="default" api="/api" news="badge"> …your list… </pull-to-refresh>
//
// It dispatches `ptr-items` ({op, items, hasMore}), `ptr-changes` ({version, changes}),
// `ptr-reset`, `ptr-done`, `ptr-progress`, `ptr-state`, `ptr-news` ({count, newest, head}),
// `ptr-session` and `ptr-connection` events; the page renders the items. Methods: refresh(),
// loadMore(), cancelRefresh(), removeRow(row).
//
// `ptr-changes` says that rows the list shows were edited (`{op: "update", item}`: draw the
// row of `item.id` again, where it stands) or removed (`{op: "remove", id}`: hand its row to
// `removeRow`, which collapses it, at once under `prefers-reduced-motion`). Whatever the
// page's handler does to the rows, the row the reader is looking at stays where it is on
// screen, also when rows above it change height or go.
//
// Attributes: `api` and `preset` as named; `feed`, the name of the feed the list reads
// (`main` when absent); `threshold`, the top edge's threshold in pixels or `fit`
// (above 0, below the rubber band's reach of 400; else the preset's); `news` (below);
// `disabled`, which stops gesture capture and samples (so infinite scroll too) and disables
// the element's buttons, refresh() and loadMore(), without ending the session. Changing
// `api`, `preset`, `threshold` or `news` replaces the session with one that continues the
// list; an invalid value is reported with `console.warn` and the default used instead.
// Changing `feed` replaces it with one that starts over: another feed is another list.
//
// Taken out of the document, the element closes its stream and ends its session (put back
// in the same task, as a move does, it keeps them); so it does when the page is hidden
// (`pagehide`), and a page restored from the back/forward cache gets a new session that
// continues its list.
//
// When its session is gone (the server restarted, or the instance holding it died behind
// a front), the element starts one that continues the list it shows: `ptr-session` then
// has `resumed: true`, the items stay, and what came meanwhile arrives as news (or live).
// Without `resumed`, the list starts over.
//
// `news` says how the page hears of items the feed gained after what it shows: "badge"
// (the default) offers a "N new items" button at the top of the list, which scrolls up and
// refreshes; "live" has the server prepend them while the list rests at the top (and offers
// the button otherwise); "off" leaves them to the next refresh.
//
// `data-connection` says where the connection stands: "connecting" while the session is
// being created, "open" while its event stream is up, "lost" while the page tries again
// (the server busy or out of reach); the `offline` attribute is set while it is "lost".
// `data-session` is the session's id, `data-phase` and `data-edge` the last state drawn,
// `data-news-count` the number of new items the button offers ("0" while it is hidden).

import { GestureCapture, Spring } from "./gesture.js";
import { RefreshSession } from "./session.js";

const NEWS_MODES = ["badge", "live", "off"];
/** The rubber band's reach in every preset: no pull gets this far, so the server refuses a
 *  threshold at or past it. */
const MAX_PULL = 400;
/** How long a scroll to the top may stand still before it counts as stopped short. */
const STILL_MS = 300;

/** The button's words; past two digits the exact number tells the reader nothing more. */
function newItems(count) {
  if (count > 99) return "99+ new items";
  return count === 1 ? "1 new item" : `${count} new items`;
}

/** An error's message as the end of a sentence, whether or not it brings its own period. */
function sentence(error) {
  return `${String(error?.message ?? error).replace(/\.$/, "")}.`;
}

const template = document.createElement("template");
template.innerHTML = `
  <div class="ptr-top" part="indicator" aria-hidden="true">
    <div class="ptr-progress"><div class="ptr-progress-bar"></div></div>
    <div class="ptr-row">
      <svg class="ptr-arrow" viewBox="0 0 24 24" width="22" height="22"><path d="M12 4v14m0 0-6-6m6 6 6-6" fill="none" stroke="currentColor" stroke-width="2.2" stroke-linecap="round" stroke-linejoin="round"/></svg>
      <span class="ptr-spinner"></span>
      <span class="ptr-label"></span>
    </div>
    <div class="ptr-message"></div>
  </div>
  <div class="ptr-scroller" part="scroller">
    <div class="ptr-news" aria-live="polite">
      <button type="button" class="ptr-news-button" part="news" hidden>
        <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path d="M12 20V6m0 0-6 6m6-6 6 6" fill="none" stroke="currentColor" stroke-width="2.4" stroke-linecap="round" stroke-linejoin="round"/></svg>
        <span class="ptr-news-label"></span>
      </button>
    </div>
    <div class="ptr-content"></div>
    <div class="ptr-bottom" part="footer">
      <span class="ptr-spinner"></span>
      <span class="ptr-bottom-label"></span>
      <button type="button" class="ptr-load-more">Load more</button>
    </div>
  </div>
  <div class="ptr-error" role="alert" hidden>
    <span class="ptr-error-text"></span>
    <button type="button" class="ptr-retry">Retry</button>
  </div>
  <div class="ptr-live" aria-live="polite" aria-atomic="true"></div>
`;

export class PullToRefreshElement extends HTMLElement {
  static observedAttributes = ["api", "feed", "preset", "threshold", "news", "disabled"];

  /** Null while the element is out of the document (or its page hidden). */
  #session = null;
  /** What `#session` was made from: a change of attributes that comes to the same needs no
   *  new one. */
  #sessionOptions = null;
  /** Aborted as `#session` ends: nothing it still does (a request it had sent may yet
   *  settle) reaches the element. */
  #sessionEnded = null;
  /** Whether the element has had a session: the next one replaces it (`ptr-session`). */
  #hadSession = false;
  /** An attribute change asked for a new session; any others in the same task join it. */
  #restartQueued = false;
  /** Null while `disabled`. */
  #gesture = null;
  /** Listeners on the window, for as long as the element is in the document. */
  #attached = null;
  /** The newest state drawn. */
  #state = { edge: null, phase: "idle", indicatorOffset: 0, seq: null };
  #dragging = null; // { edge, distance } while the user pulls
  /** The `seq` of the last sample posted, and of the last drag among them. */
  #posted = { last: null, drag: null };
  /** From the moment the input lets go of a pull until the list is back at rest: the edge
   *  it was pulled from, the `seq` whose state answers the release, and how far the list
   *  may spring back before that answer (the held offset when a refresh may start there,
   *  else rest). */
  #letGo = null;
  /** Where the list is drawn: points past the top, negative past the bottom. The finger
   *  sets it while it is down; after that it springs to where it belongs. */
  #spring = new Spring((offset) => this.#drawOffset(offset), () => matchMedia("(prefers-reduced-motion: reduce)").matches);
  #hasMore = true;
  #lastFailed = null;
  #layout = null;
  /** The list the last session showed, which the next one continues (its `shows`) when it
   *  reads the same feed. */
  #continues = null;

  connectedCallback() {
    if (!this.scroller) this.#build();
    if (!this.#attached) {
      this.#attached = new AbortController();
      const signal = this.#attached.signal;
      // A hidden page holds no stream and no session, not even in the back/forward cache
      // (where it may stay, or be dropped without a word); back from there, it gets a new one.
      window.addEventListener("pagehide", () => this.#stop(), { signal });
      window.addEventListener("pageshow", (event) => event.persisted && this.#start(), { signal });
    }
    this.#start();
  }

  disconnectedCallback() {
    // Moved rather than removed (taken out and put back in the same task, as `append` of an
    // element already in the document does): it keeps its session and stream.
    queueMicrotask(() => {
      if (this.isConnected) return;
      this.#attached?.abort();
      this.#attached = null;
      this.#stop();
    });
  }

  attributeChangedCallback(name, previous, value) {
    if (previous === value || !this.scroller) return; // before the first connect: read then
    if (name === "disabled") return this.#drawDisabled();
    if (!this.#session || this.#restartQueued) return;
    this.#restartQueued = true;
    queueMicrotask(() => {
      this.#restartQueued = false;
      if (!this.#session) return;
      const options = this.#readOptions();
      if (JSON.stringify(options) === this.#sessionOptions) return;
      this.#endSession();
      this.#openSession(options);
    });
  }

  /** The element's own parts, made once: the page's children go into its scroller. */
  #build() {
    const children = [...this.childNodes];
    this.append(template.content.cloneNode(true));
    this.scroller = this.querySelector(".ptr-scroller");
    this.content = this.querySelector(".ptr-content");
    this.content.append(...children);
    this.top = this.querySelector(".ptr-top");
    this.footer = this.querySelector(".ptr-bottom");
    this.live = this.querySelector(".ptr-live");
    this.errorBar = this.querySelector(".ptr-error");
    this.newsButton = this.querySelector(".ptr-news-button");
    this.loadMoreButton = this.querySelector(".ptr-load-more");
    this.retryButton = this.querySelector(".ptr-retry");
    this.dataset.newsCount = "0";

    this.newsButton.addEventListener("click", () => this.#showNewItems());
    this.loadMoreButton.addEventListener("click", () => this.loadMore());
    this.retryButton.addEventListener("click", () => {
      this.errorBar.hidden = true;
      if (!this.#session) return;
      if (!this.#session.id) this.#open();
      else if (this.#lastFailed === "loadMore") this.loadMore();
      else if (this.#lastFailed === "cancel") this.cancelRefresh();
      else this.refresh();
    });
    this.#drawDisabled();
  }

  /** Starts (again): a session, its stream, the gesture, the layout observer. */
  #start() {
    if (this.#session || !this.isConnected) return;
    // New items change the heights: tell the server, which decides whether to load more.
    this.#layout = new ResizeObserver(() => this.#sampleWhereItIs());
    this.#layout.observe(this.content);
    this.#layout.observe(this.scroller);
    if (!this.hasAttribute("disabled")) this.#capture();
    this.#openSession(this.#readOptions());
  }

  /** Stops everything `#start` started: nothing of the element is left running, here or on
   *  the server. */
  #stop() {
    this.#gesture?.disconnect();
    this.#gesture = null;
    this.#layout?.disconnect();
    this.#layout = null;
    this.#endSession();
    delete this.dataset.session;
    delete this.dataset.connection;
    this.removeAttribute("offline");
  }

  #capture() {
    this.#gesture = new GestureCapture(this.scroller, {
      rubberBand: () => this.#session?.config?.rubberBand,
      shown: (edge) => Math.max(0, edge === "top" ? this.#spring.value : -this.#spring.value),
      onPull: (edge, distance) => this.#follow(edge, distance),
      onSample: (sample) => {
        const seq = this.#session?.sample({ ...sample, ...this.#heights() });
        if (seq == null) return;
        this.#posted.last = seq;
        if (sample.phase === "drag") this.#posted.drag = seq;
      },
      onRelease: (edge) => this.#letGoOf(edge, true),
      onDrop: (edge) => this.#letGoOf(edge, false),
    });
  }

  /** The session's options from the attributes. An invalid value is reported and left out,
   *  which leaves the default in force. */
  #readOptions() {
    const config = {};
    const news = this.getAttribute("news");
    if (news != null && !NEWS_MODES.includes(news)) {
      console.warn(`<pull-to-refresh>: news="${news}" is not one of ${NEWS_MODES.join(", ")}; "badge" is used.`);
    }
    config.news = NEWS_MODES.includes(news) ? news : "badge";
    const threshold = this.getAttribute("threshold");
    if (threshold != null) {
      const value = threshold.trim() === "" ? NaN : Number(threshold);
      // `fit`: the server sizes it to the list's height, sample by sample.
      if (threshold.trim() === "fit") config.top = { threshold: "fit" };
      else if (Number.isFinite(value) && value > 0 && value < MAX_PULL) config.top = { threshold: value };
      else console.warn(`<pull-to-refresh>: threshold="${threshold}" is not "fit" nor a number of pixels above 0 and below ${MAX_PULL}; the preset's is used.`);
    }
    const options = { api: this.getAttribute("api") || "/api", preset: this.getAttribute("preset") || "default", config };
    // Absent, the server's default (`main`): a server that predates feeds takes the page too.
    const feed = this.getAttribute("feed");
    if (feed) options.feed = feed;
    return options;
  }

  #openSession(options) {
    // A session that replaces one the element ended says, as one the server forgot does,
    // whether it continues the list.
    const continues = this.#continues?.feed === (options.feed ?? "main") ? this.#continues.shows : null;
    const session = new RefreshSession({ ...options, continues, replaces: this.#hadSession });
    this.#hadSession = true;
    this.#session = session;
    this.#sessionOptions = JSON.stringify(options);
    this.#sessionEnded = new AbortController();
    this.#wireSession(session, this.#sessionEnded.signal);
    this.#open();
  }

  #endSession() {
    if (this.#session) this.#continues = { feed: this.#session.feed ?? "main", shows: this.#session.shows };
    this.#sessionEnded?.abort();
    this.#sessionEnded = null;
    this.#session?.close();
    this.#session = null;
  }

  get sessionId() {
    return this.#session?.id ?? null;
  }

  /** Does nothing (resolves to null) while `disabled`, as a disabled button would. */
  refresh() {
    if (!this.#session || this.hasAttribute("disabled")) return Promise.resolve(null);
    this.errorBar.hidden = true;
    return this.#session.refresh().catch((error) => this.#actionFailed("refresh", error));
  }

  cancelRefresh() {
    if (!this.#session) return Promise.resolve(null);
    return this.#session.cancelRefresh().catch((error) => this.#actionFailed("cancel", error));
  }

  /** Does nothing (resolves to null) while `disabled`, as a disabled button would. */
  loadMore() {
    if (!this.#session || this.hasAttribute("disabled")) return Promise.resolve(null);
    this.errorBar.hidden = true;
    return this.#session.loadMore().catch((error) => this.#actionFailed("loadMore", error));
  }

  /** `disabled`: no gesture, no samples, no actions from the element's buttons; the session
   *  and its stream stay, so that the list still takes what the server sends. */
  #drawDisabled() {
    const disabled = this.hasAttribute("disabled");
    if (disabled) this.setAttribute("aria-disabled", "true");
    else this.removeAttribute("aria-disabled");
    for (const button of [this.newsButton, this.loadMoreButton, this.retryButton]) button.disabled = disabled;
    if (!this.#session) return; // #start captures, or not
    if (disabled) {
      // A pull under way is dropped, and the server told where the list rests.
      this.#gesture?.disconnect();
      this.#gesture = null;
    } else if (!this.#gesture) {
      this.#capture();
      this.#showWhereItIs();
    }
  }

  /** The "N new items" button takes the reader to the top, where the refresh puts them. The
   *  refresh waits for the scroll to end: items landing while the list is still on its way
   *  up would be kept out of sight, as if the reader were reading further down. */
  async #showNewItems() {
    await this.#scrollToTop();
    return this.refresh();
  }

  /** Resolves once the list is at its top, or has stopped short of it (the reader scrolled
   *  against it). Smoothly, unless the reader asked for less motion. */
  #scrollToTop() {
    const scroller = this.scroller;
    if (scroller.scrollTop <= 0) return Promise.resolve();
    const smooth = !matchMedia("(prefers-reduced-motion: reduce)").matches;
    scroller.scrollTo({ top: 0, behavior: smooth ? "smooth" : "instant" });
    return new Promise((resolve) => {
      let last = scroller.scrollTop;
      let moved = performance.now();
      const check = (now) => {
        const top = scroller.scrollTop;
        if (top !== last) {
          last = top;
          moved = now;
        }
        if (top <= 0 || now - moved > STILL_MS) resolve();
        else requestAnimationFrame(check);
      };
      requestAnimationFrame(check);
    });
  }

  /** A busy or unreachable server is waited for inside the session; this fails only when
   *  the server refuses the session itself. */
  #open() {
    const session = this.#session;
    return session.open().catch((error) => {
      if (session === this.#session) this.#sessionFailed(error);
      return null;
    });
  }

  /** Tells the server where the list is, unless `disabled` (which pauses infinite scroll)
   *  or a pull is under way (whose samples say where it is). */
  #sampleWhereItIs() {
    if (this.hasAttribute("disabled") || this.#gesture?.pull) return;
    this.#session?.sample({ y: this.scroller.scrollTop, phase: "scroll", ...this.#heights() });
  }

  /** Where the list is, and, without infinite scroll, a first page for an empty list
   *  (nothing else would fill it). */
  #showWhereItIs() {
    this.#sampleWhereItIs();
    if (this.#session?.config && !this.#session.config.prefetch && this.#itemCount() === 0) this.loadMore();
  }

  /** A new session took over: a resumed one continues the list (and tells of what came
   *  meanwhile); any other starts over from the newest items, which come next. */
  #replaced(detail) {
    this.#clearNews();
    this.#emit("session", detail);
  }

  #sessionFailed(error) {
    const message = `Could not start the list: ${sentence(error)}`;
    this.#showError(message, "session");
    this.#announce(message);
  }

  /** An action the server stayed too busy for, even after the wait it asked for. */
  #actionFailed(kind, error) {
    const what = { refresh: "Could not refresh", loadMore: "Could not load more", cancel: "Could not cancel" }[kind];
    const message = `${what}: ${sentence(error)}`;
    this.#showError(message, kind);
    this.#announce(message);
    return null;
  }

  #heights() {
    return { contentHeight: this.content.offsetHeight + this.footer.offsetHeight, viewportHeight: this.scroller.clientHeight };
  }

  #emit(name, detail) {
    this.dispatchEvent(new CustomEvent(`ptr-${name}`, { detail, bubbles: true }));
  }

  #announce(text) {
    this.live.textContent = "";
    requestAnimationFrame(() => (this.live.textContent = text));
  }

  #showError(message, kind) {
    this.#lastFailed = kind;
    this.querySelector(".ptr-error-text").textContent = message;
    this.errorBar.hidden = false;
  }

  #wireSession(session, signal) {
    const on = (name, handler) => session.addEventListener(name, handler, { signal });
    on("open", (event) => {
      this.dataset.session = event.detail.id;
      // A new session's states start afresh: nothing of the old one's pull is waited for.
      this.#state = { ...event.detail.state, seq: null };
      this.#letGo = null;
      this.#place();
      this.#showWhereItIs();
    });
    on("session", (event) => this.#replaced(event.detail));
    on("error", (event) => this.#sessionFailed(event.detail));
    on("state", (event) => this.#drawState(event.detail));
    on("progress", (event) => {
      const { fraction, message, kind } = event.detail;
      if (kind === "refresh") {
        this.top.style.setProperty("--ptr-fraction", String(fraction));
        this.querySelector(".ptr-message").textContent = message;
      }
      this.#emit("progress", event.detail);
    });
    on("items", (event) => {
      const { op, items, actionId, hasMore } = event.detail;
      this.#hasMore = hasMore;
      // New items on top are the ones the button offered (a refresh brings exactly those;
      // a live page got them without asking): a later `news` offers what is left.
      if (op === "prepend") this.#clearNews();
      this.#emit("items", event.detail);
      this.#drawFooter();
      // Nothing else tells a screen reader of items that came without an action.
      if (op === "prepend" && actionId == null && items.length > 0) this.#announce(`${newItems(items.length)} added`);
    });
    on("news", (event) => {
      this.#drawNews(event.detail.count);
      this.#emit("news", event.detail);
    });
    on("changes", (event) => {
      // The page redraws and removes rows in its handler, synchronously: the reader's row is
      // put back where it was on screen after it.
      const anchor = this.#anchor();
      this.#emit("changes", event.detail);
      this.#keep(anchor);
      const removed = event.detail.changes.filter((change) => change.op === "remove").length;
      if (removed > 0) this.#announce(removed === 1 ? "1 item removed" : `${removed} items removed`);
    });
    on("done", (event) => {
      const { kind, outcome, added, error } = event.detail;
      if (outcome === "failed") {
        const what = kind === "refresh" ? "Refresh failed" : "Loading more failed";
        this.#showError(`${what}: ${error}`, kind);
        this.#announce(`${what}: ${error}`);
      } else if (outcome === "completed" && kind === "refresh") {
        this.#announce(added === 0 ? "Up to date" : `Updated, ${added} new`);
      } else if (outcome === "completed" && added > 0) {
        this.#announce(`Loaded ${added} older items`);
      }
      this.#emit("done", event.detail);
    });
    on("reset", (event) => {
      this.#hasMore = true;
      this.#clearNews();
      this.#emit("reset", event.detail);
    });
    on("connection", (event) => {
      this.dataset.connection = event.detail;
      this.toggleAttribute("offline", event.detail === "lost");
      this.#emit("connection", event.detail);
    });
  }

  #rows() {
    return this.content.querySelectorAll("[role=article], article, li");
  }

  #itemCount() {
    return this.#rows().length;
  }

  /** Takes `row`, one of the list's rows, out of the list; resolves once it is gone. A row in
   *  sight collapses first (unless the reader asked for less motion); one out of sight goes
   *  at once. Either way the row the reader is looking at stays where it is on screen, and
   *  focus inside the row goes to the list. */
  removeRow(row) {
    if (!row?.isConnected) return Promise.resolve();
    if (row.contains(document.activeElement)) {
      this.scroller.tabIndex = -1;
      this.scroller.focus({ preventScroll: true });
    }
    const view = this.scroller.getBoundingClientRect();
    const box = row.getBoundingClientRect();
    const inSight = box.bottom > view.top && box.top < view.bottom && box.height > 0;
    if (!inSight || matchMedia("(prefers-reduced-motion: reduce)").matches) {
      const anchor = this.#anchor(row);
      row.remove();
      this.#keep(anchor);
      return Promise.resolve();
    }
    // The rows below close up over it: its height, its padding and the gap after it go.
    const gap = parseFloat(getComputedStyle(row.parentElement).rowGap) || 0;
    row.dataset.ptrRemoving = "";
    Object.assign(row.style, { height: `${box.height}px`, overflow: "hidden", boxSizing: "border-box" });
    void row.offsetHeight; // the start of the transition
    Object.assign(row.style, {
      transition: "height 200ms ease, padding 200ms ease, margin 200ms ease, opacity 160ms ease",
      height: "0px",
      paddingTop: "0px",
      paddingBottom: "0px",
      marginBottom: `${-gap}px`,
      opacity: "0",
    });
    return new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        const anchor = this.#anchor(row);
        row.remove();
        this.#keep(anchor);
        resolve();
      };
      row.addEventListener("transitionend", (event) => event.target === row && event.propertyName === "height" && finish());
      setTimeout(finish, 400); // a transition that never ends (the tab hidden, the row moved)
    });
  }

  /** The row the reader is looking at (the first one whose bottom is below the top of the
   *  list's view), other than `except`, and where it is on screen. */
  #anchor(except = null) {
    const top = this.scroller.getBoundingClientRect().top;
    for (const row of this.#rows()) {
      if (row === except || row.dataset.ptrRemoving != null) continue;
      const box = row.getBoundingClientRect();
      if (box.bottom > top) return { row, offset: box.top - top };
    }
    return null;
  }

  /** Puts the anchor's row back where it was on screen, if it is still there. */
  #keep(anchor) {
    if (!anchor?.row.isConnected) return;
    const now = anchor.row.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top;
    if (now !== anchor.offset) this.scroller.scrollTop += now - anchor.offset;
  }

  /** Draws the newest state by `seq`: the label and arrow as the server says (no label
   *  at rest), the phase, and where the list belongs. */
  #drawState(state) {
    const previous = this.#state;
    if (state.seq != null && previous.seq != null && state.seq < previous.seq) return;
    this.#state = state;
    if (state.phase === "refreshing" && previous.phase !== "refreshing") {
      this.#announce("Refreshing…");
      this.top.style.setProperty("--ptr-fraction", "0");
      this.querySelector(".ptr-message").textContent = "";
    }
    this.dataset.phase = state.phase;
    this.dataset.edge = state.edge ?? "";
    const top = state.edge === "top";
    this.querySelector(".ptr-label").textContent = top ? state.label : "";
    this.querySelector(".ptr-arrow").style.transform = `rotate(${top ? state.rotation : 0}deg)`;
    this.#place();
    this.#drawFooter();
    this.#emit("state", state);
  }

  #drawNews(count) {
    if (!(count > 0)) return this.#clearNews();
    this.querySelector(".ptr-news-label").textContent = newItems(count);
    this.newsButton.hidden = false;
    this.dataset.newsCount = String(count);
  }

  #clearNews() {
    // A keyboard reader who pressed the button goes on from the list, not from the page's top.
    if (this.newsButton.contains(document.activeElement)) {
      this.scroller.tabIndex = -1;
      this.scroller.focus({ preventScroll: true });
    }
    this.newsButton.hidden = true;
    // Emptied too, so that the live region has something new to say the next time.
    this.querySelector(".ptr-news-label").textContent = "";
    this.dataset.newsCount = "0";
  }

  #drawFooter() {
    const state = this.#state;
    const label = this.querySelector(".ptr-bottom-label");
    const loading = state.edge === "bottom" && state.phase === "loading";
    this.footer.dataset.loading = String(loading);
    if (state.edge === "bottom" && state.phase !== "idle") label.textContent = state.label;
    else label.textContent = this.#hasMore ? "" : "No more items";
    this.querySelector(".ptr-load-more").hidden = loading || !this.#hasMore;
  }

  /** The input moves the list: it is drawn where the finger has it, at once. */
  #follow(edge, distance) {
    this.#letGo = null;
    this.#dragging = distance > 0 ? { edge, distance } : null;
    this.toggleAttribute("dragging", this.#dragging != null);
    this.#spring.jump(edge === "top" ? distance : -distance);
  }

  /** The input let go of the list (`released`), or the pull was dropped. Until the server
   *  answers the samples posted up to now, the list springs back to rest, or, when a refresh
   *  may start there, no further than the held offset: when the last state was armed or
   *  refreshing, or when the server has not yet seen where the pull got to and it got past
   *  the held offset. */
  #letGoOf(edge, released) {
    this.#dragging = null;
    this.removeAttribute("dragging");
    const state = this.#state;
    const held = this.#session?.config?.top?.heldOffset ?? 0;
    const heard = state.seq != null && this.#posted.drag != null && state.seq >= this.#posted.drag;
    const decided = state.edge === "top" && (state.phase === "armed" || state.phase === "refreshing");
    const holds = released && edge === "top" && (decided || (!heard && this.#spring.value > held));
    this.#letGo = { edge, answeredBy: this.#posted.last, answered: false, until: holds ? held : 0 };
    this.#place();
  }

  /** Where the list goes when no input holds it. After a lift it only ever moves back
   *  toward rest: a state for a sample older than the release never moves it, and a refresh
   *  the server starts holds it where it has got to, at most at the held offset, rather than
   *  pulling it down again. Once the release is answered and the list is back at rest, it
   *  goes where the server holds the indicator, as before the pull. */
  #place() {
    if (this.#dragging) return;
    const state = this.#state;
    const held = state.edge === "top" ? state.indicatorOffset : 0;
    const letGo = this.#letGo;
    if (letGo && !letGo.answered) letGo.answered = state.seq != null && letGo.answeredBy != null && state.seq >= letGo.answeredBy;
    if (letGo?.answered && this.#spring.value === 0 && !this.#spring.moving) this.#letGo = null;
    if (!this.#letGo) return this.#spring.moveTo(held);
    if (letGo.edge !== "top") return this.#spring.moveTo(0);
    this.#spring.moveTo(Math.max(0, Math.min(letGo.answered ? held : letGo.until, this.#spring.value)));
  }

  #drawOffset(offset) {
    this.scroller.style.transform = offset ? `translateY(${offset}px)` : "";
    this.top.style.setProperty("--ptr-offset", `${Math.max(0, offset)}px`);
    if (offset === 0 && !this.#spring.moving && this.#letGo?.answered) this.#letGo = null;
  }
}

customElements.define("pull-to-refresh", PullToRefreshElement);
