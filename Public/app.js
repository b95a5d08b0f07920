// The demo list: renders the items the server sends into a role="feed" list. Everything
// about the gesture lives in the <pull-to-refresh> element and, behind it, on the server.

const params = new URLSearchParams(location.search);
const element = document.getElementById("list");
// A preset from the address (?preset=ios15) and how new items arrive (?news=live) are set
// before the element starts, so that its first session has them (a change would replace it).
if (params.get("preset")) element.setAttribute("preset", params.get("preset"));
if (params.get("feed")) element.setAttribute("feed", params.get("feed"));
if (params.get("news")) element.setAttribute("news", params.get("news"));
if (params.get("threshold")) element.setAttribute("threshold", params.get("threshold"));
await import("/pull-to-refresh/element.js");

const feed = element.querySelector(".feed");
const empty = element.querySelector(".empty");
const refreshButton = document.getElementById("refresh");
const connection = document.querySelector(".connection");
const newsMode = document.getElementById("news-mode");
const feedName = document.querySelector(".feed-name");
const shown = new Set();

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** One item as an article. Every field goes in as text: titles are never markup. */
function render(item) {
  const article = document.createElement("li");
  article.className = "item";
  article.setAttribute("role", "article");
  article.dataset.id = item.id;
  const title = document.createElement("h2");
  if (item.link && /^https?:\/\//i.test(item.link)) {
    const link = document.createElement("a");
    link.href = item.link;
    link.rel = "noopener noreferrer";
    link.textContent = item.title;
    title.append(link);
  } else {
    title.textContent = item.title;
  }
  article.append(title);
  if (item.summary) {
    const summary = document.createElement("p");
    summary.textContent = item.summary;
    article.append(summary);
  }
  const meta = document.createElement("p");
  meta.className = "meta";
  const time = document.createElement("time");
  time.dateTime = item.published;
  time.textContent = timeFormat.format(new Date(item.published));
  meta.append(time);
  if (item.author) meta.append(` · ${item.author}`);
  article.append(meta);
  return article;
}

function updatePositions() {
  // A row on its way out is no longer counted.
  const articles = [...feed.children].filter((row) => row.dataset.ptrRemoving == null);
  for (let index = 0; index < articles.length; index++) {
    articles[index].setAttribute("aria-posinset", String(index + 1));
    articles[index].setAttribute("aria-setsize", "-1");
  }
  empty.hidden = articles.length > 0;
}

element.addEventListener("ptr-items", (event) => {
  const { op, items } = event.detail;
  const fresh = items.filter((item) => !shown.has(item.id));
  for (const item of fresh) shown.add(item.id);
  const nodes = fresh.map(render);
  if (op === "prepend") {
    // Keep what the reader is looking at in place when items arrive above it.
    const scroller = element.scroller;
    const before = scroller.scrollHeight;
    feed.prepend(...nodes);
    if (scroller.scrollTop > 0) scroller.scrollTop += scroller.scrollHeight - before;
    for (const node of nodes) node.classList.add("new");
  } else {
    feed.append(...nodes);
  }
  updatePositions();
});

// Rows the list shows were edited or removed: an edited row is drawn again where it stands,
// a removed one collapses. The element keeps the reader's place whatever happens above it.
element.addEventListener("ptr-changes", (event) => {
  for (const change of event.detail.changes) {
    const id = change.op === "update" ? change.item.id : change.id;
    const row = feed.querySelector(`[data-id="${CSS.escape(id)}"]:not([data-ptr-removing])`);
    if (!row) continue;
    if (change.op === "update") {
      const fresh = render(change.item);
      fresh.classList.add("edited");
      row.replaceWith(fresh);
    } else {
      shown.delete(id);
      element.removeRow(row).then(updatePositions);
    }
  }
  updatePositions();
});

element.addEventListener("ptr-reset", () => {
  feed.replaceChildren();
  shown.clear();
  updatePositions();
});

element.addEventListener("ptr-session", (event) => {
  // A resumed session continues this list; another starts it over.
  if (event.detail.resumed) return;
  feed.replaceChildren();
  shown.clear();
  updatePositions();
});

/** The header's Refresh button is off while a refresh runs, and while the list is `disabled`. */
function drawRefreshButton() {
  refreshButton.disabled = element.dataset.phase === "refreshing" || element.hasAttribute("disabled");
}

element.addEventListener("ptr-state", (event) => {
  const busy = event.detail.phase === "refreshing" || event.detail.phase === "loading";
  feed.setAttribute("aria-busy", String(busy));
  drawRefreshButton();
});

new MutationObserver(() => {
  connection.textContent = element.hasAttribute("offline") ? "Reconnecting…" : "";
  drawRefreshButton();
}).observe(element, { attributes: true, attributeFilter: ["offline", "disabled"] });

refreshButton.addEventListener("click", () => element.refresh());

/** Which feed the list reads, as text: a name is never markup. */
function drawFeedName() {
  const name = element.getAttribute("feed") || "main";
  feedName.textContent = name;
  feed.setAttribute("aria-label", name === "main" ? "Latest items" : `Latest items in ${name}`);
}
drawFeedName();
new MutationObserver(drawFeedName).observe(element, { attributes: true, attributeFilter: ["feed"] });

// Another mode is another session, which the element opens when its attribute changes; it
// continues the list. The address keeps the mode for a reload.
newsMode.value = element.getAttribute("news") ?? "badge";
if (newsMode.selectedIndex < 0) newsMode.value = "badge"; // the element's own fallback
newsMode.addEventListener("change", () => {
  element.setAttribute("news", newsMode.value);
  params.set("news", newsMode.value);
  history.replaceState(null, "", `?${params}`);
});
