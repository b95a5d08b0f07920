// Input capture and the list's motion. Touch, mouse drag, wheel and trackpad overscroll all
// become the same samples: the rubber band from the session's config is applied to the
// finger's travel, and the displayed offset is reported; whether that offset means anything
// is the server's call. After the input ends, the list settles on a spring of its own.

const WHEEL_RELEASE_MS = 160;
const LINE_HEIGHT = 16;

/** The UIKit rubber band with `maxPull` as its dimension: approaches, never reaches it. */
export function rubberBand(travel, { coefficient = 1, maxPull = 400 } = {}) {
  if (travel <= 0) return 0;
  return (1 - 1 / ((travel * coefficient) / maxPull + 1)) * maxPull;
}

/** The travel that `rubberBand` turns into `distance`: where a finger that takes hold of a
 *  list already pulled (springing back, or held open) starts from. */
export function travelFor(distance, { coefficient = 1, maxPull = 400 } = {}) {
  if (distance <= 0) return 0;
  const shown = Math.min(distance, maxPull * 0.999);
  return shown / (coefficient * (1 - shown / maxPull));
}

/** How long the list takes to settle after the input ends: the platform's own smooth
 *  spring (SwiftUI's `.smooth`, UIKit's bounce back), half a second, without a bounce. */
const SPRING_RESPONSE_S = 0.5;
/** Its angular frequency, per second. */
const OMEGA = (2 * Math.PI) / SPRING_RESPONSE_S;
/** One frame at 60 Hz, in milliseconds. */
const FRAME_MS = 1000 / 60;
/** Closer than this (points, points per second) the spring is at rest. */
const SPRING_REST = { distance: 0.25, speed: 4 };

/** A critically damped spring that draws a value on every frame until it rests at its
 *  target. It never overshoots, so a list moving back toward rest never passes it; a new
 *  target is taken from where the value is, at the speed it has, or slower where that
 *  speed would carry it past. */
export class Spring {
  #value = 0;
  #velocity = 0;
  #target = 0;
  #frame = null;
  #time = 0;

  /** @param {(value: number) => void} draw  called with the value whenever it changes
   *  @param {() => boolean} still  true when the reader asked for less motion: every
   *  move is then a jump */
  constructor(draw, still = () => false) {
    this.draw = draw;
    this.still = still;
  }

  get value() {
    return this.#value;
  }

  get target() {
    return this.#target;
  }

  get moving() {
    return this.#frame != null;
  }

  /** Puts the value there at once, at rest: a finger moves it. */
  jump(value) {
    this.#stop();
    this.#target = value;
    this.#velocity = 0;
    if (value === this.#value) return;
    this.#value = value;
    this.draw(value);
  }

  /** Springs toward `target` from where the value is; the first frame already shows the
   *  time since this call. */
  moveTo(target) {
    if (this.still()) return this.jump(target);
    if (target === this.#target && (this.#frame != null || target === this.#value)) return;
    this.#target = target;
    // Heading for the new target faster than the spring can stop there, it would pass it
    // and come back: it slows to the fastest speed that stops on it instead.
    const away = this.#value - target;
    if (away === 0 || (Math.sign(this.#velocity) === -Math.sign(away) && Math.abs(this.#velocity) > OMEGA * Math.abs(away))) {
      this.#velocity = -OMEGA * away;
    }
    if (this.#frame == null) {
      // A frame is on screen about one frame after its time: the first one drawn from now
      // shows the list that much on its way, however early in its frame this call came.
      this.#time = performance.now() - FRAME_MS;
      this.#frame = requestAnimationFrame((now) => this.#step(now));
    }
  }

  #stop() {
    if (this.#frame != null) cancelAnimationFrame(this.#frame);
    this.#frame = null;
  }

  #step(now) {
    const dt = Math.max(0, Math.min(now - this.#time, 100)) / 1000;
    this.#time = now;
    const x = this.#value - this.#target;
    const decay = Math.exp(-OMEGA * dt);
    const carried = this.#velocity + OMEGA * x;
    const next = (x + carried * dt) * decay;
    this.#velocity = (this.#velocity - OMEGA * carried * dt) * decay;
    if (Math.abs(next) < SPRING_REST.distance && Math.abs(this.#velocity) < SPRING_REST.speed) {
      this.#frame = null;
      this.#velocity = 0;
      this.#value = this.#target;
    } else {
      this.#frame = requestAnimationFrame((time) => this.#step(time));
      this.#value = this.#target + next;
    }
    this.draw(this.#value);
  }
}

export class GestureCapture {
  /** Ends every listener at once. */
  #listening = new AbortController();
  #wheelTimer = null;

  /** @param {HTMLElement} scroller  the element that scrolls the list
   *  @param {object} hooks  rubberBand(): config; shown(edge): the distance the list shows
   *  past that edge now; onPull(edge, distance) while the input moves the list;
   *  onSample({y, phase, input?}); onRelease(edge) once the input let go of the list (its release
   *  sample is posted by then); onDrop(edge) when the pull was dropped instead */
  constructor(scroller, hooks) {
    this.scroller = scroller;
    this.hooks = hooks;
    this.pull = null; // { edge: "top"|"bottom", origin, travel, source }
    const signal = this.#listening.signal;
    this.#listenTouch(signal);
    this.#listenMouse(signal);
    this.#listenWheel(signal);
    this.#listenScroll(signal);
  }

  /** Stops capturing. A pull under way is dropped, not released: the list goes back to
   *  rest and the server is told where it rests, so nothing is left armed. */
  disconnect() {
    this.#listening.abort();
    clearTimeout(this.#wheelTimer);
    this.#wheelTimer = null;
    this.scroller.classList.remove("ptr-grabbing");
    if (!this.pull) return;
    const edge = this.pull.edge;
    this.pull = null;
    this.hooks.onSample({ y: this.scroller.scrollTop, phase: "scroll" });
    this.hooks.onDrop(edge);
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

  /** A pull starts where the list is: at rest, or where a spring or a held refresh has it,
   *  so that taking hold of it again never makes it jump. Answers the travel it starts at. */
  #begin(edge, source) {
    const travel = travelFor(this.hooks.shown(edge), this.hooks.rubberBand());
    this.pull = { edge, travel, source };
    return travel;
  }

  /** The input moved the pull to `travel`. Back at zero or below, the pull ends there, the
   *  same way for every input: the server is told the list is at its edge again, and
   *  further movement scrolls the list as usual (or starts a new pull). */
  #move(travel) {
    const pull = this.pull;
    pull.travel = Math.max(0, travel);
    const distance = rubberBand(pull.travel, this.hooks.rubberBand());
    const y = pull.edge === "top" ? -distance : this.maxY + distance;
    if (pull.travel === 0) this.pull = null;
    this.hooks.onPull(pull.edge, distance);
    // What moved the list goes with it: the server counts pulls by it (its pull insights).
    this.hooks.onSample({ y, phase: "drag", input: pull.source });
    return this.pull != null;
  }

  /** The input let go: the release carries the offset it let go at, and the sample after it
   *  where the list itself rests (it springs back on its own from there). Both are posted in
   *  the same task, so they reach the server together. */
  #end() {
    if (!this.pull) return;
    const { edge, travel, source } = this.pull;
    const distance = rubberBand(travel, this.hooks.rubberBand());
    this.hooks.onSample({ y: edge === "top" ? -distance : this.maxY + distance, phase: "release", input: source });
    this.pull = null;
    this.hooks.onSample({ y: this.scroller.scrollTop, phase: "scroll" });
    this.hooks.onRelease(edge);
  }

  /** Touch: native scrolling in the middle, the pull taken over at either end. */
  #listenTouch(signal) {
    const scroller = this.scroller;
    let lastY = 0;
    scroller.addEventListener("touchstart", (event) => {
      if (event.touches.length === 1) lastY = event.touches[0].clientY;
    }, { passive: true, signal });
    scroller.addEventListener("touchmove", (event) => {
      if (event.touches.length !== 1) return;
      const y = event.touches[0].clientY;
      const dy = y - lastY;
      lastY = y;
      if (!this.pull) {
        // The pull starts where the finger was when the list reached its end.
        if (dy > 0 && this.#atTop()) this.#begin("top", "touch");
        else if (dy < 0 && this.#atBottom()) this.#begin("bottom", "touch");
        else return;
      }
      if (this.pull.source !== "touch") return;
      if (this.#move(this.pull.travel + (this.pull.edge === "top" ? dy : -dy))) event.preventDefault();
    }, { passive: false, signal });
    const ended = () => {
      if (this.pull?.source === "touch") this.#end();
    };
    scroller.addEventListener("touchend", ended, { signal });
    scroller.addEventListener("touchcancel", ended, { signal });
  }

  /** Mouse: drag to scroll, and to pull at either end. */
  #listenMouse(signal) {
    const scroller = this.scroller;
    let mouse = null;
    scroller.addEventListener("pointerdown", (event) => {
      if (event.pointerType !== "mouse" || event.button !== 0) return;
      if (event.target.closest("button, a, input, select, textarea, [contenteditable]")) return;
      mouse = { id: event.pointerId, lastY: event.clientY, moved: false };
    }, { signal });
    scroller.addEventListener("pointermove", (event) => {
      if (!mouse || event.pointerId !== mouse.id) return;
      const dy = event.clientY - mouse.lastY;
      mouse.lastY = event.clientY;
      if (dy === 0) return;
      if (!mouse.moved) {
        mouse.moved = true;
        scroller.setPointerCapture(event.pointerId);
        scroller.classList.add("ptr-grabbing");
      }
      if (!this.pull) {
        if (dy > 0 && this.#atTop()) this.#begin("top", "mouse");
        else if (dy < 0 && this.#atBottom()) this.#begin("bottom", "mouse");
        else return void (scroller.scrollTop -= dy);
      }
      if (this.pull.source === "mouse") this.#move(this.pull.travel + (this.pull.edge === "top" ? dy : -dy));
    }, { signal });
    const ended = (event) => {
      if (!mouse || event.pointerId !== mouse.id) return;
      mouse = null;
      scroller.classList.remove("ptr-grabbing");
      if (this.pull?.source === "mouse") this.#end();
    };
    scroller.addEventListener("pointerup", ended, { signal });
    scroller.addEventListener("pointercancel", ended, { signal });
  }

  /** Wheel and trackpad: scrolling on past an end pulls; a pause is the release. */
  #listenWheel(signal) {
    this.scroller.addEventListener("wheel", (event) => {
      if (event.ctrlKey) return; // pinch-zoom
      const delta = event.deltaMode === 1 ? event.deltaY * LINE_HEIGHT : event.deltaY;
      if (!this.pull) {
        if (delta < 0 && this.#atTop()) this.#begin("top", "wheel");
        else if (delta > 0 && this.#atBottom()) this.#begin("bottom", "wheel");
        else return;
      }
      if (this.pull.source !== "wheel") return;
      event.preventDefault();
      clearTimeout(this.#wheelTimer);
      if (!this.#move(this.pull.travel + (this.pull.edge === "top" ? -delta : delta))) return;
      this.#wheelTimer = setTimeout(() => {
        if (this.pull?.source === "wheel") this.#end();
      }, WHEEL_RELEASE_MS);
    }, { passive: false, signal });
  }

  /** Plain scrolling: the server needs it for infinite scroll. */
  #listenScroll(signal) {
    this.scroller.addEventListener("scroll", () => {
      if (!this.pull) this.hooks.onSample({ y: this.scroller.scrollTop, phase: "scroll" });
    }, { passive: true, signal });
  }
}
