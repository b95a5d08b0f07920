// Input capture: touch, mouse drag, wheel and trackpad overscroll, all turned into the same
// samples. It applies the rubber band from the session's config to the finger's travel and
// reports the displayed offset; whether that offset means anything is the server's call.

const WHEEL_RELEASE_MS = 160;
const LINE_HEIGHT = 16;

/** The UIKit rubber band with `maxPull` as its dimension: approaches, never reaches it. */
export function rubberBand(travel, { coefficient = 1, maxPull = 400 } = {}) {
  if (travel <= 0) return 0;
  return (1 - 1 / ((travel * coefficient) / maxPull + 1)) * maxPull;
}

export class GestureCapture {
  /** Ends every listener at once. */
  #listening = new AbortController();

  /** @param {HTMLElement} scroller  the element that scrolls the list
   *  @param {object} hooks  rubberBand(): config; onOffset(edge, distance) while pulling;
   *                         onSample({y, phase}); onRelease(edge) */
  constructor(scroller, hooks) {
    this.scroller = scroller;
    this.hooks = hooks;
    this.pull = null; // { edge: "top"|"bottom", origin, travel, source }
    this.wheelTimer = null;
    this.#listen();
  }

  /** Stops capturing. A pull under way is dropped, not released: the list goes back to
   *  rest and the server is told where it rests, so nothing is left armed. */
  disconnect() {
    this.#listening.abort();
    clearTimeout(this.wheelTimer);
    this.wheelTimer = null;
    this.scroller.classList.remove("ptr-grabbing");
    if (!this.pull) return;
    const edge = this.pull.edge;
    this.pull = null;
    this.hooks.onOffset(edge, 0);
    this.hooks.onSample({ y: this.scroller.scrollTop, phase: "scroll" });
    this.hooks.onRelease(edge);
  }

  get maxY() {
    return Math.max(0, this.scroller.scrollHeight - this.scroller.clientHeight);
  }

  #atTop() {
    return this.scroller.scrollTop <= 0;
  }

  #atBottom() {
    const { scrollHeight, clientHeight, scrollTop } = this.scroller;
    return scrollHeight > clientHeight && scrollTop >= scrollHeight - clientHeight - 1;
  }

  /** The offset to post: negative past the top, beyond maxY past the end. */
  #offset() {
    if (!this.pull) return this.scroller.scrollTop;
    const distance = rubberBand(this.pull.travel, this.hooks.rubberBand());
    return this.pull.edge === "top" ? -distance : this.maxY + distance;
  }

  #begin(edge, origin, source) {
    this.pull = { edge, origin, travel: 0, source };
  }

  #move(travel, phase = "drag") {
    this.pull.travel = Math.max(0, travel);
    const distance = rubberBand(this.pull.travel, this.hooks.rubberBand());
    this.hooks.onOffset(this.pull.edge, distance);
    this.hooks.onSample({ y: this.#offset(), phase });
  }

  #end() {
    if (!this.pull) return;
    const edge = this.pull.edge;
    this.hooks.onSample({ y: this.#offset(), phase: "release" });
    this.pull = null;
    this.hooks.onOffset(edge, 0);
    // The list springs back to rest; the server answers where the indicator is held.
    this.hooks.onSample({ y: this.scroller.scrollTop, phase: "scroll" });
    this.hooks.onRelease(edge);
  }

  #listen() {
    const scroller = this.scroller;
    const signal = this.#listening.signal;

    // Touch: native scrolling in the middle, the pull taken over at either end.
    let lastTouchY = 0;
    scroller.addEventListener("touchstart", (event) => {
      if (event.touches.length !== 1) return;
      lastTouchY = event.touches[0].clientY;
    }, { passive: true, signal });
    scroller.addEventListener("touchmove", (event) => {
      if (event.touches.length !== 1) return;
      const y = event.touches[0].clientY;
      const previous = lastTouchY;
      lastTouchY = y;
      if (!this.pull) {
        // The pull starts where the finger was when the list reached its end.
        if (y > previous && this.#atTop()) this.#begin("top", previous, "touch");
        else if (y < previous && this.#atBottom()) this.#begin("bottom", previous, "touch");
        else return;
      }
      if (this.pull.source !== "touch") return;
      const travel = this.pull.edge === "top" ? y - this.pull.origin : this.pull.origin - y;
      if (travel <= 0) {
        this.#move(0);
        this.pull = null;
        this.hooks.onOffset("top", 0);
        return;
      }
      event.preventDefault();
      this.#move(travel);
    }, { passive: false, signal });
    const touchEnded = () => {
      if (this.pull?.source === "touch") this.#end();
    };
    scroller.addEventListener("touchend", touchEnded, { signal });
    scroller.addEventListener("touchcancel", touchEnded, { signal });

    // Mouse: drag to scroll, and to pull at either end.
    let mouse = null;
    scroller.addEventListener("pointerdown", (event) => {
      if (event.pointerType !== "mouse" || event.button !== 0) return;
      if (event.target.closest("button, a, input, select, textarea, [contenteditable]")) return;
      mouse = { id: event.pointerId, lastY: event.clientY, moved: false };
    }, { signal });
    scroller.addEventListener("pointermove", (event) => {
      if (!mouse || event.pointerId !== mouse.id) return;
      const y = event.clientY;
      const dy = y - mouse.lastY;
      mouse.lastY = y;
      if (dy === 0) return;
      if (!mouse.moved) {
        mouse.moved = true;
        scroller.setPointerCapture(event.pointerId);
        scroller.classList.add("ptr-grabbing");
      }
      if (!this.pull) {
        if (dy > 0 && this.#atTop()) this.#begin("top", y - dy, "mouse");
        else if (dy < 0 && this.#atBottom()) this.#begin("bottom", y - dy, "mouse");
        else {
          scroller.scrollTop -= dy;
          return;
        }
      }
      const travel = this.pull.edge === "top" ? y - this.pull.origin : this.pull.origin - y;
      if (travel <= 0) {
        this.#move(0);
        this.pull = null;
        return;
      }
      this.#move(travel);
    }, { signal });
    const mouseEnded = (event) => {
      if (!mouse || event.pointerId !== mouse.id) return;
      mouse = null;
      scroller.classList.remove("ptr-grabbing");
      if (this.pull?.source === "mouse") this.#end();
    };
    scroller.addEventListener("pointerup", mouseEnded, { signal });
    scroller.addEventListener("pointercancel", mouseEnded, { signal });

    // Wheel and trackpad: scrolling on past an end pulls; a pause is the release.
    scroller.addEventListener("wheel", (event) => {
      if (event.ctrlKey) return; // pinch-zoom
      const delta = event.deltaMode === 1 ? event.deltaY * LINE_HEIGHT : event.deltaY;
      if (!this.pull) {
        if (delta < 0 && this.#atTop()) this.#begin("top", 0, "wheel");
        else if (delta > 0 && this.#atBottom()) this.#begin("bottom", 0, "wheel");
        else return;
      }
      if (this.pull.source !== "wheel") return;
      event.preventDefault();
      const travel = this.pull.travel + (this.pull.edge === "top" ? -delta : delta);
      if (travel <= 0) {
        this.#move(0);
        this.pull = null;
        this.hooks.onOffset("top", 0);
        return;
      }
      this.#move(travel);
      clearTimeout(this.wheelTimer);
      this.wheelTimer = setTimeout(() => {
        if (this.pull?.source === "wheel") this.#end();
      }, WHEEL_RELEASE_MS);
    }, { passive: false, signal });

    // Plain scrolling: the server needs it for infinite scroll.
    scroller.addEventListener("scroll", () => {
      if (!this.pull) this.hooks.onSample({ y: scroller.scrollTop, phase: "scroll" });
    }, { passive: true, signal });
  }
}
