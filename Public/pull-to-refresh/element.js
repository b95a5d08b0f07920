// <pull-to-refresh>: wraps a list, captures the gesture, posts samples and draws exactly
// what the server says. Drop it into any page:
//
//   <script type="module" src="/pull-to-refresh/element.js"></script>
//   <pull-to-refresh preset="default" api="/api"> …your list… </pull-to-refresh>
//
// It dispatches `ptr-items` ({op, items, hasMore}), `ptr-reset`, `ptr-done`, `ptr-progress`,
// `ptr-state`, `ptr-session` and `ptr-connection` events; the page renders the items.
// Methods: refresh(), loadMore(), cancelRefresh().
//
// `data-connection` says where the connection stands: "connecting" while the session is
// being created, "open" while its event stream is up, "lost" while the page tries again
// (the server busy or out of reach); the `offline` attribute is set while it is "lost".
// `data-session` is the session's id, `data-phase` and `data-edge` the last state drawn.

import { GestureCapture } from "./gesture.js";
import { RefreshSession } from "./session.js";

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
  #session;
  #gesture;
  #state = { edge: null, phase: "idle", indicatorOffset: 0 };
  #dragging = null; // { edge, distance } while the user pulls
  #hasMore = true;
  #lastFailed = null;
  #layout = null;

  connectedCallback() {
    if (this.#session) return;
    const children = [...this.childNodes];
    this.append(template.content.cloneNode(true));
    this.scroller = this.querySelector(".ptr-scroller");
    this.content = this.querySelector(".ptr-content");
    this.content.append(...children);
    this.top = this.querySelector(".ptr-top");
    this.footer = this.querySelector(".ptr-bottom");
    this.live = this.querySelector(".ptr-live");
    this.errorBar = this.querySelector(".ptr-error");

    this.querySelector(".ptr-load-more").addEventListener("click", () => this.loadMore());
    this.querySelector(".ptr-retry").addEventListener("click", () => {
      this.errorBar.hidden = true;
      if (!this.#session.id) this.#open();
      else if (this.#lastFailed === "loadMore") this.loadMore();
      else if (this.#lastFailed === "cancel") this.cancelRefresh();
      else this.refresh();
    });

    this.#session = new RefreshSession({
      api: this.getAttribute("api") || "/api",
      preset: this.getAttribute("preset") || "default",
    });
    this.#wireSession();
    this.#gesture = new GestureCapture(this.scroller, {
      rubberBand: () => this.#session.config?.rubberBand,
      onOffset: (edge, distance) => {
        this.#dragging = distance > 0 ? { edge, distance } : null;
        this.#drawOffset();
      },
      onSample: (sample) => this.#session.sample({ ...sample, ...this.#heights() }),
      onRelease: () => this.#drawOffset(),
    });
    // New items change the heights: tell the server, which decides whether to load more.
    this.#layout = new ResizeObserver(() => this.#session.sample({ y: this.scroller.scrollTop, phase: "scroll", ...this.#heights() }));
    this.#layout.observe(this.content);
    this.#layout.observe(this.scroller);
    this.#open();
  }

  disconnectedCallback() {
    this.#layout?.disconnect();
  }

  get sessionId() {
    return this.#session?.id;
  }

  refresh() {
    this.errorBar.hidden = true;
    return this.#session.refresh().catch((error) => this.#actionFailed("refresh", error));
  }

  cancelRefresh() {
    return this.#session.cancelRefresh().catch((error) => this.#actionFailed("cancel", error));
  }

  loadMore() {
    this.errorBar.hidden = true;
    return this.#session.loadMore().catch((error) => this.#actionFailed("loadMore", error));
  }

  /** A busy or unreachable server is waited for inside the session; this fails only when
   *  the server refuses the session itself. */
  #open() {
    this.#session.open().catch((error) => this.#sessionFailed(error));
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

  #wireSession() {
    const session = this.#session;
    session.addEventListener("open", (event) => {
      this.dataset.session = event.detail.id;
      this.#session.sample({ y: this.scroller.scrollTop, phase: "scroll", ...this.#heights() });
      // Without infinite scroll nothing would fill an empty list: ask for the first page.
      if (!event.detail.config.prefetch && this.#itemCount() === 0) this.loadMore();
    });
    session.addEventListener("session", (event) => this.#emit("session", event.detail));
    session.addEventListener("error", (event) => this.#sessionFailed(event.detail));
    session.addEventListener("state", (event) => this.#drawState(event.detail));
    session.addEventListener("progress", (event) => {
      const { fraction, message, kind } = event.detail;
      if (kind === "refresh") {
        this.top.style.setProperty("--ptr-fraction", String(fraction));
        this.querySelector(".ptr-message").textContent = message;
      }
      this.#emit("progress", event.detail);
    });
    session.addEventListener("items", (event) => {
      this.#hasMore = event.detail.hasMore;
      this.#emit("items", event.detail);
      this.#drawFooter();
    });
    session.addEventListener("done", (event) => {
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
    session.addEventListener("reset", (event) => {
      this.#hasMore = true;
      this.#emit("reset", event.detail);
    });
    session.addEventListener("connection", (event) => {
      this.dataset.connection = event.detail;
      this.toggleAttribute("offline", event.detail === "lost");
      this.#emit("connection", event.detail);
    });
  }

  #itemCount() {
    return this.content.querySelectorAll("[role=article], article, li").length;
  }

  #drawState(state) {
    const previous = this.#state;
    this.#state = state;
    if (state.phase === "refreshing" && previous.phase !== "refreshing") {
      this.#announce("Refreshing…");
      this.top.style.setProperty("--ptr-fraction", "0");
      this.querySelector(".ptr-message").textContent = "";
    }
    this.dataset.phase = state.phase;
    this.dataset.edge = state.edge ?? "";
    if (state.edge === "top") {
      this.querySelector(".ptr-label").textContent = state.label;
      this.querySelector(".ptr-arrow").style.transform = `rotate(${state.rotation}deg)`;
    }
    this.#drawOffset();
    this.#drawFooter();
    this.#emit("state", state);
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

  /** Where the list sits: with the finger while pulling, else where the server holds it. */
  #drawOffset() {
    let offset = 0;
    let live = false;
    if (this.#dragging) {
      offset = this.#dragging.edge === "top" ? this.#dragging.distance : -this.#dragging.distance;
      live = true;
    } else if (this.#state.edge === "top") {
      offset = this.#state.indicatorOffset;
    }
    this.toggleAttribute("dragging", live);
    this.scroller.style.transform = offset ? `translateY(${offset}px)` : "";
    this.top.style.setProperty("--ptr-offset", `${Math.max(0, offset)}px`);
  }
}

customElements.define("pull-to-refresh", PullToRefreshElement);
