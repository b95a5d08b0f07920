import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// A local upstream the test serves itself: a feed in throttled chunks, with or without
/// `Content-Length`, 304 for a matching ETag, and the failure modes.
struct Upstream {
    static func rss(count: Int, prefix: String = "up") -> String {
        let entries = (0..<count).map { index in
            "<item><title>\(prefix) story \(index)</title><guid>\(prefix)-\(index)</guid><link>https://example.com/\(index)</link>"
                + "<description>Padding \(String(repeating: "lorem ipsum ", count: 40))</description>"
                + "<pubDate>Sun, 22 Nov 2026 0\(index % 10):00:00 GMT</pubDate></item>"
        }
        return "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Up</title>\(entries.joined())</channel></rss>"
    }

    /// Requests seen, by path, with their If-None-Match; and the gate `gated` waits behind.
    final class Log: Sendable {
        let requests = Mutex<[(String, String?)]>([])
        private let gateOpen = Atomic<Bool>(false)

        /// Lets `gated` answer.
        func openGate() { gateOpen.store(true, ordering: .releasing) }
        var isGateOpen: Bool { gateOpen.load(ordering: .acquiring) }

        private let over = Atomic<Bool>(false)
        /// The test is over: `hang` stops hanging, so the upstream can stop.
        func finish() { over.store(true, ordering: .releasing) }
        var isOver: Bool { over.load(ordering: .acquiring) }
    }

    static func run(_ body: @Sendable (Int, Log) async throws -> Void) async throws {
        let log = Log()
        let router = Router()
        let feed = ByteBuffer(string: rss(count: 12))
        @Sendable func throttled(_ buffer: ByteBuffer, length: Bool) -> Response {
            var headers: HTTPFields = [.contentType: "application/rss+xml", .eTag: "\"v1\""]
            if length { headers[.contentLength] = String(buffer.readableBytes) }
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    var rest = buffer
                    while rest.readableBytes > 0, let chunk = rest.readSlice(length: min(1500, rest.readableBytes)) {
                        try await writer.write(chunk)
                        try await Task.sleep(for: .milliseconds(25))
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("feed") { request, _ -> Response in
            log.requests.withLock { $0.append(("feed", request.headers[.ifNoneMatch])) }
            if request.headers[.ifNoneMatch] == "\"v1\"" { return Response(status: .notModified) }
            return throttled(feed, length: true)
        }
        // The feed, once the test opens the gate (at most two minutes later).
        router.get("gated") { request, _ -> Response in
            log.requests.withLock { $0.append(("gated", request.headers[.ifNoneMatch])) }
            let deadline = ContinuousClock.now + .seconds(120)
            while !log.isGateOpen, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            return throttled(feed, length: true)
        }
        router.get("chunked") { _, _ in throttled(feed, length: false) }
        // Items without dates, downloaded in full every time (no validators).
        router.get("undated") { _, _ in
            let entries = (0..<3).map { "<item><title>Undated \($0)</title><guid>undated-\($0)</guid></item>" }.joined()
            return Response(
                status: .ok, headers: [.contentType: "application/rss+xml"],
                body: .init(byteBuffer: ByteBuffer(string: "<rss version=\"2.0\"><channel><title>U</title>\(entries)</channel></rss>")))
        }
        // Three items; from the second download on, one has a corrected title and another
        // has left the document (as an old entry leaves a feed).
        router.get("revised") { _, _ -> Response in
            let downloads = log.requests.withLock { requests in
                requests.append(("revised", nil))
                return requests.filter { $0.0 == "revised" }.count
            }
            let titles = downloads == 1 ? ["First", "Second", "Third"] : ["First", "Second, corrected"]
            let entries = titles.enumerated().map { index, title in
                "<item><title>\(title)</title><guid>revised-\(index)</guid><pubDate>Sun, 22 Nov 2026 0\(index):00:00 GMT</pubDate></item>"
            }
            return Response(
                status: .ok, headers: [.contentType: "application/rss+xml"],
                body: .init(byteBuffer: ByteBuffer(string: "<rss version=\"2.0\"><channel><title>R</title>\(entries.joined())</channel></rss>")))
        }
        // Entries without a guid or a date, named by their link or their text; from the second
        // download on, each has another title.
        router.get("retitled") { _, _ -> Response in
            let downloads = log.requests.withLock { requests in
                requests.append(("retitled", nil))
                return requests.filter { $0.0 == "retitled" }.count
            }
            let title = downloads == 1 ? "Draft" : "Final"
            let entries =
                "<item><title>\(title) one</title><link>/posts/one</link></item>"
                + "<item><title>\(title) two</title><description>The second entry's text</description></item>"
            return Response(
                status: .ok, headers: [.contentType: "application/rss+xml"],
                body: .init(byteBuffer: ByteBuffer(string: "<rss version=\"2.0\"><channel><title>T</title>\(entries)</channel></rss>")))
        }
        // windows-1252 bytes, said only by the HTTP charset; and a JSON Feed whose version is short.
        router.get("latin") { _, _ in
            var bytes = ByteBuffer(string: "<rss version=\"2.0\"><channel><title>L</title><item><title>Caf")
            bytes.writeBytes([0xE9, 0x20, 0x96, 0x20, 0x64, 0x6F, 0x6E, 0x92, 0x74])  // "é – don’t"
            bytes.writeString("</title><guid>latin-1</guid></item></channel></rss>")
            return Response(status: .ok, headers: [.contentType: "application/rss+xml; charset=windows-1252"], body: .init(byteBuffer: bytes))
        }
        router.get("short-version") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/feed+json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"version":"1.1","items":[{"id":"s1","content_html":"<p>Untitled</p>"}]}"#)))
        }
        router.get("json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/feed+json"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        string: """
                            {"version":"https://jsonfeed.org/version/1.1","title":"J","items":[{"id":"j1","title":"From JSON","date_published":"2026-11-22T10:00:00Z"}]}
                            """)))
        }
        router.get("broken") { _, _ in Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "<rss><channel><item><title>oops</channel>")))
        }
        router.get("down") { _, _ in Response(status: .serviceUnavailable) }
        router.get("huge") { _, _ in throttled(ByteBuffer(string: rss(count: 400)), length: false) }
        // No answer until the test is over (or a minute has passed).
        router.get("hang") { _, _ -> Response in
            let deadline = ContinuousClock.now + .seconds(60)
            while !log.isOver, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            return Response(status: .ok)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            defer { log.finish() }
            try await body(client.port!, log)
        }
    }
}

@Suite struct UpstreamRefreshTests {
    /// A download's deadline is a minute, which a test of the upstream's content never meets
    /// however busy the machine; the tests of the deadline set theirs.
    func server(feeds: [String], _ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        TestServer.configuration { configuration in
            configuration.feeds = feeds
            configuration.feedTimeout = .seconds(60)
            configuration.actionTimeout = .seconds(120)
            adjust(&configuration)
        }
    }

    func refresh(_ server: TestServer) async throws -> [SSE] {
        let (id, stream) = try await server.watchedSession()
        _ = try await server.post("/api/sessions/\(id)/refresh")
        return try await stream.events(until: "done", within: 120)
    }

    /// An upstream item without a date is dated when first seen, and keeps that date when the
    /// feed is downloaded again: it does not jump above what came after it.
    @Test func anUndatedItemKeepsTheDateItWasFirstSeenWith() async throws {
        try await Upstream.run { port, _ in
            try await TestServer.run(server(feeds: ["http://127.0.0.1:\(port)/undated"])) { server in
                #expect(try await refresh(server).last?.json["added"] as? Int == 3)
                let first = try await server.get("/api/items?limit=10").json["items"] as? [[String: Any]] ?? []
                let dates = Dictionary(
                    uniqueKeysWithValues: first.compactMap { item in
                        (item["id"] as? String).map { ($0, item["published"] as? String) }
                    })
                #expect(dates.count == 3)
                let later = #"{"id":"later","title":"Published after the first download"}"#
                #expect(try await server.post("/api/items", later).status == 201)
                try await Task.sleep(for: .milliseconds(20))  // a second download's "now" is another instant
                _ = try await refresh(server)
                let again = try await server.get("/api/items?limit=10").json["items"] as? [[String: Any]] ?? []
                #expect(again.compactMap { $0["id"] as? String } == ["later"] + first.compactMap { $0["id"] as? String })
                for item in again where (item["id"] as? String)?.hasPrefix("undated") == true {
                    #expect(item["published"] as? String == dates[item["id"] as? String ?? ""] ?? nil, "\(item)")
                }
            }
        }
    }

    /// An upstream entry whose title changed is an edit in place, which the page that shows
    /// it is told of (and counted); an entry that left the document stays in the feed.
    @Test func anEditedUpstreamEntryIsAnEditInPlaceAndOneThatLeftStays() async throws {
        try await Upstream.run { port, _ in
            try await TestServer.run(server(feeds: ["http://127.0.0.1:\(port)/revised"])) { server in
                let (id, stream) = try await server.watchedSession()
                #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
                let first = try await stream.events(until: "done", within: 120)
                #expect(first.last?.json["added"] as? Int == 3)
                _ = try await stream.nextEvent()  // the state after it

                #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
                let second = try await stream.events(until: "done", within: 120)
                let changes = second.filter { $0.event == "changes" }.flatMap { $0.json["changes"] as? [[String: Any]] ?? [] }
                #expect(changes.count == 1)
                #expect(changes.first?["op"] as? String == "update")
                let item = changes.first?["item"] as? [String: Any]
                #expect(item?["id"] as? String == "revised-1" && item?["title"] as? String == "Second, corrected")
                #expect(second.last?.json["added"] as? Int == 0)
                let stored = try await server.get("/api/items?limit=10").json["items"] as? [[String: Any]] ?? []
                #expect(stored.compactMap { $0["id"] as? String }.filter { $0.hasPrefix("revised") } == ["revised-2", "revised-1", "revised-0"])
                let metrics = try await server.get("/metrics").text
                #expect(metrics.contains("ptr_upstream_items_edited_total 1"))
            }
        }
    }

    /// Entries without a guid keep their ids when retitled (the link, else a digest of their
    /// text): the second download edits both in place, the page is told, and neither takes a
    /// new date.
    @Test func aRetitledEntryWithoutAGuidIsOneItemEditedInPlace() async throws {
        try await Upstream.run { port, _ in
            try await TestServer.run(server(feeds: ["http://127.0.0.1:\(port)/retitled"])) { server in
                let (id, stream) = try await server.watchedSession()
                #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
                #expect(try await stream.events(until: "done", within: 120).last?.json["added"] as? Int == 2)
                _ = try await stream.nextEvent()
                let first = try await server.get("/api/items?limit=10").json["items"] as? [[String: Any]] ?? []
                #expect(first.compactMap { $0["title"] as? String }.sorted() == ["Draft one", "Draft two"])
                #expect(first.contains { $0["id"] as? String == "http://127.0.0.1:\(port)/posts/one" }, "a relative link made absolute names it")

                try await Task.sleep(for: .milliseconds(20))  // a second download's "now" is another instant
                #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
                let second = try await stream.events(until: "done", within: 120)
                #expect(second.last?.json["added"] as? Int == 0)
                let changed = second.filter { $0.event == "changes" }.flatMap { $0.json["changes"] as? [[String: Any]] ?? [] }
                #expect(changed.compactMap { ($0["item"] as? [String: Any])?["title"] as? String }.sorted() == ["Final one", "Final two"])
                let again = try await server.get("/api/items?limit=10").json["items"] as? [[String: Any]] ?? []
                #expect(again.count == 2)
                for item in again {
                    let before = first.first { $0["id"] as? String == item["id"] as? String }
                    #expect(before?["published"] as? String == item["published"] as? String, "\(item)")
                }
            }
        }
    }

    /// The HTTP charset decides a feed's encoding; a JSON Feed version written short is read
    /// and counted as a warning, like bytes that are not UTF-8.
    @Test func theHTTPCharsetIsReadAndLeniencyIsCounted() async throws {
        try await Upstream.run { port, _ in
            let feeds = ["http://127.0.0.1:\(port)/latin", "http://127.0.0.1:\(port)/short-version"]
            try await TestServer.run(server(feeds: feeds)) { server in
                #expect(try await refresh(server).last?.json["added"] as? Int == 2)
                let items = try await server.get("/api/items?limit=10").json["items"] as? [[String: Any]] ?? []
                #expect(Set(items.compactMap { $0["title"] as? String }) == ["Café – don’t", "Untitled"])
                let metrics = try await server.get("/metrics").text
                #expect(metrics.contains(#"ptr_upstream_warnings_total{warning="jsonfeed_version"} 1"#))
                #expect(metrics.contains(#"ptr_upstream_warnings_total{warning="not_utf8"} 0"#))
            }
        }
    }

    @Test func aThrottledFeedShowsRisingProgressThenItemsThenDone() async throws {
        try await Upstream.run { port, log in
            try await TestServer.run(server(feeds: ["http://127.0.0.1:\(port)/feed"])) { server in
                let events = try await refresh(server)
                let progress = events.filter { $0.event == "progress" }.map { $0.json }
                let fractions = progress.compactMap { $0["fraction"] as? Double }
                #expect(Set(fractions).count >= 4, "\(fractions)")
                #expect(fractions == fractions.sorted())
                #expect(fractions.last == 1)
                let stages = progress.compactMap { $0["stage"] as? String }
                for stage in ["connecting", "downloading", "parsing", "storing"] { #expect(stages.contains(stage), "\(stages)") }
                #expect(progress.contains { ($0["message"] as? String)?.contains(" of ") == true }, "bytes of Content-Length")
                #expect(Array(events.suffix(2).map(\.event)) == ["items", "done"])
                #expect(events.last?.json["added"] as? Int == 12)
                #expect(events.last?.json["outcome"] as? String == "completed")

                // The next refresh asks with the ETag and is answered 304: nothing new, cheaply.
                let again = try await refresh(server)
                #expect(again.last?.json["outcome"] as? String == "completed")
                #expect(again.last?.json["added"] as? Int == 12, "a new session gets the stored page")
                #expect(log.requests.withLock { $0.last?.1 } == "\"v1\"")
                let messages = again.compactMap { $0.event == "progress" ? $0.json["message"] as? String : nil }
                #expect(messages.contains { $0.contains("unchanged") }, "\(messages)")
                let stored = try await server.get("/api/items?limit=100").json["items"] as? [Any]
                #expect(stored?.count == 12, "no duplicates across refreshes")
            }
        }
    }

    @Test func aFeedWithoutContentLengthReportsBytesSoFar() async throws {
        try await Upstream.run { port, _ in
            try await TestServer.run(server(feeds: ["http://127.0.0.1:\(port)/chunked"])) { server in
                let events = try await refresh(server)
                let progress = events.filter { $0.event == "progress" }.map { $0.json }
                let fractions = progress.compactMap { $0["fraction"] as? Double }
                #expect(Set(fractions).count >= 4)
                #expect(fractions == fractions.sorted())
                #expect(progress.contains { ($0["message"] as? String)?.hasSuffix("so far") == true })
                #expect(events.last?.json["added"] as? Int == 12)
            }
        }
    }

    /// `--upstream NAME=URL` feeds the feed `NAME` alone: its sessions' refreshes pull it,
    /// `main`'s do not, and the items land in `NAME` only.
    @Test func aNamedFeedsUpstreamFeedsThatFeedOnly() async throws {
        try await Upstream.run { port, log in
            let configuration = server(feeds: ["http://127.0.0.1:\(port)/json"]) { $0.upstreams = ["team=http://127.0.0.1:\(port)/feed"] }
            try await TestServer.run(configuration) { server in
                let (team, stream) = try await server.watchedSession(#"{"feed":"team"}"#)
                _ = try await server.post("/api/sessions/\(team)/refresh")
                let events = try await stream.events(until: "done", within: 10)
                #expect(events.last?.json["added"] as? Int == 12, "the twelve items of team's upstream, not main's one")
                #expect(log.requests.withLock { $0.map(\.0) } == ["feed"])
                let teamItems = try await server.get("/api/feeds/team/items?limit=100").json["items"] as? [[String: Any]]
                #expect(teamItems?.count == 12)
                #expect(teamItems?.contains { $0["title"] as? String == "From JSON" } == false)
                let mainItems = try await server.get("/api/items?limit=100").json["items"] as? [[String: Any]]
                #expect(mainItems?.contains { ($0["id"] as? String)?.hasPrefix("up-") == true } == false, "main holds none of team's")

                let main = try await refresh(server)
                #expect(main.last?.json["added"] as? Int == 1, "main pulls its own upstream: the JSON feed's one item")
                #expect(try await server.get("/api/feeds/team").json["head"] as? Int == 12, "team did not move")
            }
        }
    }

    @Test func severalFeedsRefreshTogether() async throws {
        try await Upstream.run { port, _ in
            let feeds = ["http://127.0.0.1:\(port)/feed", "http://127.0.0.1:\(port)/json"]
            try await TestServer.run(server(feeds: feeds)) { server in
                let events = try await refresh(server)
                #expect(events.last?.json["added"] as? Int == 13)
                let titles = (events.first { $0.event == "items" }?.json["items"] as? [[String: Any]])?.compactMap { $0["title"] as? String }
                #expect(titles?.contains("From JSON") == true)
            }
        }
    }

    @Test(arguments: [
        ("/broken", "could not be read"),
        ("/down", "answered 503"),
        ("/huge", "over the limit"),
        ("/hang", "did not answer"),
    ])
    func upstreamFailuresEndInDoneFailedWithASentence(path: String, expected: String) async throws {
        try await Upstream.run { port, _ in
            let configuration = server(feeds: ["http://127.0.0.1:\(port)\(path)"]) { configuration in
                configuration.maxFeedBytes = 64 * 1024
                // The one that hangs before its head outlasts its deadline (it answers only
                // when the test is over).
                if path == "/hang" { configuration.feedTimeout = .seconds(2) }
            }
            try await TestServer.run(configuration) { server in
                _ = try await server.post("/api/items", #"{"id":"local","title":"Already here"}"#)
                let done = try await refresh(server).last!.json
                #expect(done["outcome"] as? String == "failed")
                let error = done["error"] as? String ?? ""
                #expect(error.contains(expected), "\(error)")
                #expect(error.contains("127.0.0.1"))
                let stored = try await server.get("/api/items").json["items"] as? [[String: Any]]
                #expect(stored?.map { $0["id"] as? String } == ["local"], "stored items stay untouched")
            }
        }
    }

    @Test func refusedAndUnresolvableHostsAreExplained() async throws {
        // Port 9 (discard) is closed on loopback; .invalid never resolves.
        for (url, expected) in [("http://127.0.0.1:9/feed", "refused"), ("http://no-such-host.invalid/feed", "could not be found")] {
            try await TestServer.run(server(feeds: [url])) { server in
                let done = try await refresh(server).last!.json
                #expect(done["outcome"] as? String == "failed")
                #expect((done["error"] as? String)?.contains(expected) == true, "\(done)")
            }
        }
    }

    @Test func feedURLsMustBeHTTP() {
        #expect(throws: UpstreamError.self) { try UpstreamSet(urls: ["ftp://example.com/feed"]) }
        #expect(throws: UpstreamError.self) { try UpstreamSet(urls: ["not a url"]) }
    }
}
