// The pull insights page: reads GET /api/insights (this instance's figures, as the server
// counted them from the samples it decided on) and draws them as SVG. It decides nothing
// and keeps nothing; every number on it is the server's.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 480;
const HEIGHT = 220;
const MARGIN = { top: 14, right: 12, bottom: 34, left: 40 };

/** What each outcome is called, in the order the totals show them. */
const OUTCOMES = [
  ["begun", "pulls begun", "#6b7280"],
  ["armed", "armed", "#0a66d8"],
  ["takenBack", "armed, taken back", "#d97706"],
  ["refreshed", "refreshes", "#059669"],
  ["loadedMore", "load-mores", "#7c3aed"],
  ["retriggered", "again within 10 s", "#dc2626"],
  ["short", "under 10 points", "#9ca3af"],
];
const COLORS = Object.fromEntries(OUTCOMES.map(([key, , color]) => [key, color]));

const INPUTS = ["touch", "mouse", "wheel", "keyboard", "program", "unknown"];
const BANDS = ["0-599", "600-899", "900-1199", "1200+", "unknown"];
/** The outcomes the input and band plots compare. */
const COMPARED = ["begun", "refreshed", "takenBack", "short"];

const $ = (selector) => document.querySelector(selector);

function element(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text != null) node.textContent = text;
  return node;
}

/** A fresh plot area: the SVG emptied, its coordinates set, and the inner box. */
function plot(id) {
  const svg = $(`#${id} svg`);
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
  return { svg, x0: MARGIN.left, x1: WIDTH - MARGIN.right, y0: HEIGHT - MARGIN.bottom, y1: MARGIN.top };
}

/** A y axis from 0 to `max` with a few round ticks. */
function yAxis(area, max) {
  const step = niceStep(max / 4);
  const top = Math.max(step, Math.ceil(max / step) * step);
  for (let value = 0; value <= top; value += step) {
    const y = area.y0 - (value / top) * (area.y0 - area.y1);
    area.svg.append(element("line", { x1: area.x0, x2: area.x1, y1: y, y2: y, stroke: "#e5e7eb" }));
    area.svg.append(element("text", { x: area.x0 - 6, y: y + 4, "text-anchor": "end" }, String(value)));
  }
  return (value) => area.y0 - (value / top) * (area.y0 - area.y1);
}

function niceStep(raw) {
  if (raw <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw);
}

function legend(area, keys) {
  let x = area.x0;
  for (const key of keys) {
    area.svg.append(element("rect", { x, y: 2, width: 10, height: 10, fill: COLORS[key] }));
    const label = OUTCOMES.find(([name]) => name === key)[1];
    area.svg.append(element("text", { x: x + 14, y: 11 }, label));
    x += 24 + label.length * 6.2;
  }
}

/** The distance at release as a histogram, with every preset's threshold and the span a
 *  `fit` threshold can take. */
function drawDistance(report) {
  const area = plot("distance");
  const bounds = report.distanceBounds;
  const counts = report.total.distance.counts;
  const top = Math.max(...bounds) * 1.2;
  const x = (points) => area.x0 + (Math.min(points, top) / top) * (area.x1 - area.x0);
  const y = yAxis(area, Math.max(1, ...counts));
  // The span of `fit`: 20 % of the viewport, between its bounds.
  area.svg.append(element("rect", {
    x: x(report.fit.min), y: area.y1, width: x(report.fit.max) - x(report.fit.min), height: area.y0 - area.y1,
    fill: "#0a66d8", "fill-opacity": 0.07,
  }));
  counts.forEach((count, index) => {
    const from = index === 0 ? 0 : bounds[index - 1];
    const to = index < bounds.length ? bounds[index] : top;
    const rect = element("rect", {
      x: x(from) + 1, y: y(count), width: Math.max(1, x(to) - x(from) - 2), height: area.y0 - y(count), fill: "#059669",
    });
    rect.append(element("title", {}, `${from}–${index < bounds.length ? to : "…"} points: ${count}`));
    area.svg.append(rect);
  });
  const thresholds = new Map();
  for (const [preset, edges] of Object.entries(report.thresholds)) {
    if (edges.top != null && (report.byPreset[preset] || Object.keys(report.byPreset).length === 0)) {
      thresholds.set(edges.top, [...(thresholds.get(edges.top) ?? []), preset]);
    }
  }
  for (const [points, presets] of thresholds) {
    area.svg.append(element("line", { x1: x(points), x2: x(points), y1: area.y1, y2: area.y0, stroke: "#dc2626", "stroke-dasharray": "4 3" }));
    area.svg.append(element("text", { x: x(points) + 3, y: area.y1 + 10, fill: "#dc2626" }, `${presets.join(", ")} ${points}`));
  }
  area.svg.append(element("text", { x: x(report.fit.min) + 2, y: area.y0 - 4, fill: "#0a66d8" }, "fit"));
  for (const tick of [0, ...bounds.filter((bound) => bound >= 20)]) {
    area.svg.append(element("text", { x: x(tick), y: area.y0 + 14, "text-anchor": "middle" }, String(tick)));
  }
  area.svg.append(element("text", { x: (area.x0 + area.x1) / 2, y: HEIGHT - 4, "text-anchor": "middle" }, "points pulled when let go"));
}

/** Outcomes per slot of the series (`resolution` seconds), as lines. */
function drawTime(report, sinceMinutes) {
  const area = plot("time");
  const keys = ["begun", "refreshed", "takenBack", "short"];
  legend(area, keys);
  area.y1 = MARGIN.top + 12;
  const step = report.resolution * 1000;
  const until = Date.parse(report.until);
  const points = report.series.map((row) => ({ ...row, at: Date.parse(row.at) }));
  // From the first slot with pulls (at least the last half hour), not the whole range asked
  // for: a day of which one hour had pulls would be a line along the floor.
  const first = points.length ? points[0].at : until;
  const from = Math.floor(Math.max(until - sinceMinutes * 60_000, Math.min(first - step, until - 30 * 60_000)) / step) * step;
  const y = yAxis(area, Math.max(1, ...points.flatMap((row) => keys.map((key) => row[key]))));
  const x = (at) => area.x0 + ((at - from) / (until - from)) * (area.x1 - area.x0);
  for (const key of keys) {
    // Slots with no pulls are zeros, not gaps.
    const bySlot = new Map(points.map((row) => [row.at, row[key]]));
    const path = [];
    for (let at = from; at <= until; at += step) {
      path.push(`${path.length ? "L" : "M"}${x(at).toFixed(1)},${y(bySlot.get(at) ?? 0).toFixed(1)}`);
    }
    area.svg.append(element("path", { d: path.join(""), fill: "none", stroke: COLORS[key], "stroke-width": 1.5 }));
  }
  for (const at of [from, (from + until) / 2, until]) {
    const label = new Date(at).toISOString().slice(11, 16);
    area.svg.append(element("text", { x: x(at), y: area.y0 + 14, "text-anchor": "middle" }, label));
  }
  area.svg.append(element("text", { x: (area.x0 + area.x1) / 2, y: HEIGHT - 4, "text-anchor": "middle" }, `UTC, per ${report.resolution / 60} minutes`));
}

/** Grouped bars of the compared outcomes, one group per name. */
function drawGroups(id, groups, names) {
  const area = plot(id);
  legend(area, COMPARED);
  area.y1 = MARGIN.top + 12;
  const shown = names.filter((name) => groups[name]);
  const y = yAxis(area, Math.max(1, ...shown.flatMap((name) => COMPARED.map((key) => groups[name][key]))));
  const slot = (area.x1 - area.x0) / Math.max(1, shown.length);
  const bar = Math.min(18, (slot - 10) / COMPARED.length);
  shown.forEach((name, index) => {
    const left = area.x0 + index * slot + (slot - bar * COMPARED.length) / 2;
    COMPARED.forEach((key, k) => {
      const value = groups[name][key];
      const rect = element("rect", { x: left + k * bar, y: y(value), width: bar - 1, height: area.y0 - y(value), fill: COLORS[key] });
      rect.append(element("title", {}, `${name}: ${value} ${key}`));
      area.svg.append(rect);
    });
    area.svg.append(element("text", { x: area.x0 + index * slot + slot / 2, y: area.y0 + 14, "text-anchor": "middle" }, name));
  });
  if (shown.length === 0) area.svg.append(element("text", { x: (area.x0 + area.x1) / 2, y: HEIGHT / 2, "text-anchor": "middle" }, "No pulls yet"));
}

function drawTotals(report) {
  const section = $(".totals");
  section.replaceChildren(...OUTCOMES.map(([key, label]) => {
    const box = document.createElement("div");
    box.className = "total";
    box.dataset.outcome = key;
    const number = document.createElement("b");
    number.textContent = String(report.total[key]);
    const name = document.createElement("span");
    name.textContent = label;
    box.append(number, name);
    return box;
  }));
}

function fillFeeds(feeds) {
  const select = $("#feed");
  if (select.options.length > 1) return;
  for (const feed of feeds) select.append(new Option(feed, feed));
}

async function load() {
  const minutes = Number($("#since").value);
  const query = new URLSearchParams({ since: new Date(Date.now() - minutes * 60_000).toISOString() });
  if ($("#feed").value) query.set("feed", $("#feed").value);
  const status = $(".status");
  try {
    const response = await fetch(`/api/insights?${query}`, { credentials: "same-origin", headers: { Accept: "application/json" } });
    const body = await response.json();
    if (!response.ok) throw new Error(body.message ?? `${response.status}`);
    fillFeeds(body.feeds);
    drawTotals(body);
    drawDistance(body);
    drawTime(body, minutes);
    drawGroups("input", body.byInput, INPUTS);
    drawGroups("band", body.byBand, BANDS);
    status.textContent = `Instance ${body.instance}, up to ${body.until.slice(11, 19)} UTC.`;
    document.body.dataset.loaded = String(body.total.begun);
  } catch (error) {
    status.textContent = `Could not read the insights: ${error.message}`;
    document.body.dataset.loaded = "error";
  }
}

$("#reload").addEventListener("click", load);
$("#since").addEventListener("change", load);
$("#feed").addEventListener("change", load);
setInterval(load, 10_000);
load();
