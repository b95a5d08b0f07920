// One event stream for every tab of this origin: a SharedWorker holds it, and each tab's
// sessions join it through their tab's port. A browser keeps at most six HTTP/1.1
// connections to a host, and an event stream holds one for as long as it is open: with a
// stream per tab, the seventh tab would never load.
//
// The stream is `GET /api/events?session=A:41&session=B`: the server names each session
// before its events (`event: session`), and each event's id is its session's own. When a
// session joins or leaves, the stream is opened again with every session's last id, so
// nothing is lost or repeated. A tab that closes or crashes lets go of the Web Lock it held
// for its session, and its session leaves within a second.
//
// Messages from a tab: {type: "join", api, session, lastEventId}, {type: "leave", session}.
// To it: {type: "open", session}, {type: "event", session, name, data, id},
// {type: "error", session, closed} (closed: the server refused the stream; the tab checks
// its session and joins again, as it would after an EventSource it could not reopen).

/** At most this many sessions share one stream (the server's limit). */
const MAX_SESSIONS = 32;
/** Until the server says otherwise with `retry:`. */
let retryMs = 1000;

/** session id → {port, api, lastEventId, since} */
const members = new Map();
/** The open streams, each {controller, sessions}: one per 32 sessions. */
let connections = [];
let reopenTimer = null;

self.onconnect = (event) => {
  const port = event.ports[0];
  port.onmessage = (message) => receive(port, message.data);
  port.start();
};

function receive(port, message) {
  if (message?.type === "join") {
    members.set(message.session, { port, api: message.api, lastEventId: message.lastEventId, since: Date.now() });
    reopenSoon();
  } else if (message?.type === "leave" && members.get(message.session)?.port === port) {
    members.delete(message.session);
    reopenSoon();
  }
}

/** Joins and leaves that come together open one stream, not one each. */
function reopenSoon(delay = 20) {
  clearTimeout(reopenTimer);
  reopenTimer = setTimeout(reopen, delay);
}

function post(session, message) {
  members.get(session)?.port.postMessage({ ...message, session });
}

/** Every stream opened again for the sessions there are now, 32 to a stream. */
function reopen() {
  for (const connection of connections) connection.controller.abort();
  connections = [];
  const ids = [...members.keys()];
  for (let start = 0; start < ids.length; start += MAX_SESSIONS) {
    const current = { controller: new AbortController(), sessions: ids.slice(start, start + MAX_SESSIONS) };
    connections.push(current);
    follow(current);
  }
}

function isOpen(current) {
  return connections.includes(current);
}

async function follow(current) {
  const joined = current.sessions;
  const api = members.get(joined[0]).api;
  const query = joined
    .map((id) => {
      const last = members.get(id).lastEventId;
      return "session=" + encodeURIComponent(last != null ? `${id}:${last}` : id);
    })
    .join("&");
  let response;
  try {
    response = await fetch(`${api}/events?${query}`, {
      signal: current.controller.signal,
      credentials: "same-origin",
      headers: { Accept: "text/event-stream" },
    });
  } catch {
    return lost(current);
  }
  if (!isOpen(current)) return;
  if (!response.ok) {
    // Refused (a session gone, a token no longer good): each tab checks its own session,
    // which it replaces or follows again, and joins anew.
    connections = connections.filter((connection) => connection !== current);
    for (const id of joined) {
      post(id, { type: "error", closed: true });
      members.delete(id);
    }
    return;
  }
  // As an EventSource's `open`: the answer came; a busy server's closes at once, and its
  // tabs then hear `error` too.
  for (const id of joined) post(id, { type: "open" });
  try {
    await read(response.body, current);
  } catch {
    // Cut off: as any dropped stream, taken up again below.
  }
  lost(current);
}

/** The stream is gone without a refusal: its tabs hear it, and it is opened again. */
function lost(current) {
  if (!isOpen(current)) return;
  for (const id of current.sessions) post(id, { type: "error", closed: false });
  reopenSoon(retryMs);
}

/** Reads the stream's events and hands each to its session's tab. */
async function read(body, current) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let session = null;
  let event = { name: "message", data: [], id: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (done || !isOpen(current)) return;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      if (line === "") {
        if (event.data.length > 0) {
          const data = event.data.join("\n");
          if (event.name === "session") {
            session = data;
          } else if (event.name === "ended") {
            post(session, { type: "error", closed: true });
            members.delete(session);
          } else if (members.has(session)) {
            if (event.id != null) members.get(session).lastEventId = event.id;
            post(session, { type: "event", name: event.name, data, id: event.id });
          }
        }
        event = { name: "message", data: [], id: null };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event.name = value;
      else if (field === "data") event.data.push(value);
      else if (field === "id") event.id = value;
      else if (field === "retry" && /^\d+$/.test(value)) retryMs = Number(value);
    }
  }
}

// A tab holds a Web Lock named after each of its sessions while it has it: one whose lock
// is no longer held (its tab closed or crashed) leaves.
setInterval(async () => {
  if (members.size === 0 || !self.navigator?.locks) return;
  const held = new Set((await navigator.locks.query()).held.map((lock) => lock.name));
  let left = false;
  for (const [id, member] of members) {
    if (Date.now() - member.since > 1000 && !held.has(`ptr-stream:${id}`)) {
      members.delete(id);
      left = true;
    }
  }
  if (left) reopenSoon();
}, 500);
