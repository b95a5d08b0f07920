import NIOCore

/// What differs between servers under test: how a channel is made, subscribed to and
/// published on. The measuring code is the same for both.
protocol Target: Sendable {
    var name: String { get }
    /// Makes a channel (a session, an nchan channel); answers its id. `hearsNews`: whether a
    /// session is told of published items (F measures the refresh's items alone); `feed`: the
    /// feed a session reads (nil: the server's default).
    func makeChannel(on connection: Connection, index: Int, hearsNews: Bool, feed: String?) async throws -> String
    func subscribe(_ channel: String) -> ByteBuffer
    func publish(_ channel: String, seq: Int) -> ByteBuffer
    /// Bytes that appear in the event carrying `seq`, and nowhere before it.
    func token(seq: Int) -> [UInt8]
    /// Requests that deliver one batch of items to every subscriber of `channel`.
    func fanOut(_ channel: String, round: Int) -> [ByteBuffer]
    var fanOutToken: [UInt8] { get }
    /// Bytes that show a new subscription is live.
    var subscribedToken: [UInt8] { get }
    /// News: whether every stream has a channel of its own (ours: a session per page) or all
    /// streams subscribe to one (nchan).
    var newsChannelPerStream: Bool { get }
    /// News: the request that brings a subscribed channel to where it hears news (ours: a
    /// load-more, so the page shows a first page), or nil when subscribing is enough.
    func showFirstPage(_ channel: String) -> ByteBuffer?
    /// News: bytes on the stream that show the channel got there.
    var firstPageToken: [UInt8]? { get }
    /// News: one publish every subscriber hears of (ours: every session of `feed`, nil the
    /// default one). `tag` keeps item ids unique per run.
    func news(_ channel: String, round: Int, tag: String, feed: String?) -> ByteBuffer
    /// News: bytes that appear once in what a subscriber reads of one publish.
    var newsToken: [UInt8] { get }
    /// Edit: what makes the item every subscriber's page shows, before the channels are made
    /// (ours: a publish, so that it is the newest item of every first page), or nil.
    func editedItem(tag: String) -> ByteBuffer?
    /// Edit: one edit of that item, which every subscriber hears of.
    func edit(_ channel: String, round: Int, tag: String) -> ByteBuffer
    /// Edit: bytes that appear once in what a subscriber reads of one edit.
    var editToken: [UInt8] { get }
}

extension Target {
    func makeChannel(on connection: Connection, index: Int, hearsNews: Bool) async throws -> String {
        try await makeChannel(on: connection, index: index, hearsNews: hearsNews, feed: nil)
    }

    func news(_ channel: String, round: Int, tag: String) -> ByteBuffer {
        news(channel, round: round, tag: tag, feed: nil)
    }
}

/// A batch the size of a refresh page: 20 items of about 200 bytes.
func itemBatch(round: Int) -> String {
    let items = (0..<20).map { index in
        #"{"id":"bench-\#(round)-\#(index)","title":"Benchmark item \#(index) of round \#(round)","summary":"\#(String(repeating: "lorem ipsum ", count: 10))","published":"2026-11-22T08:\#(index < 10 ? "0" : "")\#(index):00Z"}"#
    }
    return #"{"items":[\#(items.joined(separator: ","))]}"#
}

/// The item an edit round changes, and its title in that round.
func editedItemID(tag: String) -> String { "edited-\(tag)" }
func editedTitle(round: Int) -> String { "Benchmark item, edit \(round)" }

/// The one item a news round publishes.
func newsItemID(round: Int, tag: String) -> String { "news-\(tag)-\(round)" }
func newsTitle(round: Int) -> String { "Benchmark news, round \(round)" }

struct OurServer: Target {
    let host: String
    /// Sent with a session's creation and its stream's opening, the requests that read a feed;
    /// samples go by the session's id alone.
    var token: String?
    var name: String { "swift-pull-to-refresh" }

    private var authorization: String { token.map { "Authorization: Bearer \($0)\r\n" } ?? "" }

    func makeChannel(on connection: Connection, index: Int, hearsNews: Bool, feed: String?) async throws -> String {
        var members = hearsNews ? [] : [#""config":{"news":"off"}"#]
        if let feed { members.append(#""feed":"\#(feed)""#) }
        let request = "{\(members.joined(separator: ","))}"
        try await connection.send(Connection.request("POST", "/api/sessions", host: host, body: request, headers: authorization))
        let (status, body) = try await connection.response()
        guard status == 201, let start = body.range(of: #""id":""#), let end = body[start.upperBound...].firstIndex(of: "\"") else {
            throw BenchError("creating a session answered \(status): \(body.prefix(200))")
        }
        return String(body[start.upperBound..<end])
    }

    func subscribe(_ channel: String) -> ByteBuffer {
        Connection.request("GET", "/api/sessions/\(channel)/events", host: host, headers: authorization)
    }

    func publish(_ channel: String, seq: Int) -> ByteBuffer {
        // Pulls that stay under the threshold: state events only, no refresh.
        Connection.request("POST", "/api/sessions/\(channel)/samples", host: host, body: #"{"seq":\#(seq),"y":-\#(seq % 60 + 1)}"#)
    }

    func token(seq: Int) -> [UInt8] { Array(#""seq":\#(seq)}"#.utf8) }

    func fanOut(_ channel: String, round: Int) -> [ByteBuffer] {
        [
            Connection.request("POST", "/api/items", host: host, body: itemBatch(round: round)),
            Connection.request("POST", "/api/sessions/\(channel)/refresh", host: host, body: ""),
        ]
    }

    var fanOutToken: [UInt8] { Array("event: items".utf8) }
    var subscribedToken: [UInt8] { Array("event: state".utf8) }

    var newsChannelPerStream: Bool { true }

    func showFirstPage(_ channel: String) -> ByteBuffer? {
        Connection.request("POST", "/api/sessions/\(channel)/load-more", host: host, body: "")
    }

    /// The load-more's `done`, completed: a session hears of news only once its page shows a
    /// first page.
    var firstPageToken: [UInt8]? { Array(#""kind":"loadMore","outcome":"completed""#.utf8) }

    func news(_ channel: String, round: Int, tag: String, feed: String?) -> ByteBuffer {
        Connection.request(
            "POST", feed.map { "/api/feeds/\($0)/items" } ?? "/api/items", host: host,
            body: #"{"items":[{"id":"\#(newsItemID(round: round, tag: tag))","title":"\#(newsTitle(round: round))"}]}"#)
    }

    var newsToken: [UInt8] { Array("event: news".utf8) }

    func editedItem(tag: String) -> ByteBuffer? {
        Connection.request(
            "POST", "/api/items", host: host, body: #"{"items":[{"id":"\#(editedItemID(tag: tag))","title":"Benchmark item, as published"}]}"#)
    }

    func edit(_ channel: String, round: Int, tag: String) -> ByteBuffer {
        Connection.request("PATCH", "/api/items/\(editedItemID(tag: tag))", host: host, body: #"{"title":"\#(editedTitle(round: round))"}"#)
    }

    var editToken: [UInt8] { Array("event: changes".utf8) }
}

/// nginx with nchan: `/pub/ID` publishes, `/sub/ID` is an EventSource subscriber.
struct Nchan: Target {
    let host: String
    var name: String { "nginx + nchan" }

    /// A channel of its own whatever the feed: nchan's channels are its feeds.
    func makeChannel(on connection: Connection, index: Int, hearsNews: Bool, feed: String?) async throws -> String {
        "bench\(UInt32.random(in: 0...UInt32.max))x\(index)"
    }

    func subscribe(_ channel: String) -> ByteBuffer {
        Connection.request("GET", "/sub/\(channel)", host: host, headers: "Accept: text/event-stream\r\n")
    }

    func publish(_ channel: String, seq: Int) -> ByteBuffer {
        Connection.request("POST", "/pub/\(channel)", host: host, body: #"{"seq":\#(seq)}"#)
    }

    func token(seq: Int) -> [UInt8] { Array(#""seq":\#(seq)}"#.utf8) }

    func fanOut(_ channel: String, round: Int) -> [ByteBuffer] {
        [Connection.request("POST", "/pub/\(channel)", host: host, body: itemBatch(round: round))]
    }

    var fanOutToken: [UInt8] { Array(#"{"items":["#.utf8) }
    var subscribedToken: [UInt8] { Array("\r\n\r\n".utf8) }

    var newsChannelPerStream: Bool { false }
    func showFirstPage(_ channel: String) -> ByteBuffer? { nil }
    var firstPageToken: [UInt8]? { nil }

    /// A message shaped like our `news` event's data, so both servers carry the same bytes.
    func news(_ channel: String, round: Int, tag: String, feed: String?) -> ByteBuffer {
        let body =
            #"{"count":1,"newest":{"id":"\#(newsItemID(round: round, tag: tag))","title":"\#(newsTitle(round: round))","published":"2026-11-22T08:00:00.000Z"},"head":\#(round + 1)}"#
        return Connection.request("POST", "/pub/\(channel)", host: host, body: body)
    }

    var newsToken: [UInt8] { Array(#"{"count":"#.utf8) }

    func editedItem(tag: String) -> ByteBuffer? { nil }

    /// A message shaped like our `changes` event's data, so both servers carry the same bytes.
    func edit(_ channel: String, round: Int, tag: String) -> ByteBuffer {
        let version = round + 2
        let body =
            #"{"version":\#(version),"changes":[{"op":"update","item":{"id":"\#(editedItemID(tag: tag))","title":"\#(editedTitle(round: round))","published":"2026-11-22T08:00:00.000Z","position":1,"version":\#(version)}}]}"#
        return Connection.request("POST", "/pub/\(channel)", host: host, body: body)
    }

    var editToken: [UInt8] { Array(#"{"version":"#.utf8) }
}
