import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// An upstream that sends what no feed should: fields of megabytes, `javascript:` links, a
/// NUL, an id that is `true`, a body dripped a byte a second, a gzip bomb.
struct HostileUpstream {
    static let megabyte = 1024 * 1024

    /// A JSON Feed with two well-behaved items and one of each kind of trouble.
    static var jsonFeed: String {
        func item(_ id: String, title: String, extra: String = "") -> String {
            #"{"id": \#(id), "title": "\#(title)", "date_published": "2026-11-22T08:00:00Z"\#(extra)}"#
        }
        let huge = String(repeating: "x", count: 2 * megabyte)
        let items = [
            item(#""plain-1""#, title: "Plain one", extra: #", "url": "https://example.com/1""#),
            item(
                #""long-texts""#, title: huge,
                extra: #", "summary": "\#(huge)", "authors": [{"name": "\#(String(repeating: "a", count: megabyte))"}]"#),
            item(#""\#(String(repeating: "i", count: megabyte))""#, title: "Megabyte id"),
            item(#""script-link""#, title: "Script link", extra: #", "url": "javascript:alert(document.cookie)""#),
            item(#""nul""#, title: #"A \u0000 inside"#),
            item("true", title: "An id that is true"),
            item("7", title: "A numeric id"),
            item(#""relative""#, title: "Relative link", extra: #", "url": "/posts/relative""#),
        ]
        return #"{"version": "https://jsonfeed.org/version/1.1", "title": "Hostile", "items": [\#(items.joined(separator: ","))]}"#
    }

    static func run(_ body: @Sendable (Int) async throws -> Void) async throws {
        let router = Router()
        let feed = ByteBuffer(string: jsonFeed)
        router.get("megabytes") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/feed+json"], body: .init(byteBuffer: feed))
        }
        router.get("drip") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/rss+xml"],
                body: ResponseBody { writer in
                    for byte in "<rss version=\"2.0\"><channel><title>Slow</title></channel></rss>".utf8 {
                        try await writer.write(ByteBuffer(bytes: [byte]))
                        try await Task.sleep(for: .seconds(1))
                    }
                    try await writer.finish(nil)
                })
        }
        let bomb = Gzip.compress(ByteBuffer(repeating: UInt8(ascii: " "), count: 4 * megabyte))!
        router.get("bomb") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/rss+xml", .contentEncoding: "gzip"], body: .init(byteBuffer: bomb))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in try await body(client.port!) }
    }
}

@Suite struct UpstreamLimitTests {
    /// A download's deadline is a minute, which a test of what an upstream sends never meets
    /// however busy the machine; the test of the deadline sets its own.
    func server(_ feed: String, _ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        TestServer.configuration { configuration in
            configuration.feeds = [feed]
            configuration.feedTimeout = .seconds(60)
            configuration.actionTimeout = .seconds(120)
            adjust(&configuration)
        }
    }

    func refresh(_ server: TestServer, within seconds: Double = 120) async throws -> [SSE] {
        let (id, stream) = try await server.watchedSession()
        _ = try await server.post("/api/sessions/\(id)/refresh")
        return try await stream.events(until: "done", within: seconds)
    }

    @Test func megabyteFieldsAreCutOrTheirItemSkippedAndPagesStaySmall() async throws {
        try await HostileUpstream.run { port in
            try await TestServer.run(server("http://127.0.0.1:\(port)/megabytes")) { server in
                let done = try await refresh(server).last!.json
                #expect(done["outcome"] as? String == "completed", "\(done)")
                #expect(done["added"] as? Int == 4, "\(done)")

                let page = try await server.get("/api/items")
                print("a page of /api/items after an upstream with megabyte fields: \(page.body.count) bytes")
                #expect(page.status == 200)
                #expect(page.body.count < 256 * 1024, "a page of /api/items is \(page.body.count) bytes")
                let items = page.json["items"] as? [[String: Any]] ?? []
                let byID = Dictionary(
                    items.compactMap { item in (item["id"] as? String).map { ($0, item) } }, uniquingKeysWith: { first, _ in first })
                #expect(Set(byID.keys) == ["plain-1", "long-texts", "7", "relative"], "\(byID.keys.sorted())")
                let long = byID["long-texts"] ?? [:]
                #expect((long["title"] as? String)?.unicodeScalars.count == 500)
                #expect((long["summary"] as? String)?.unicodeScalars.count == 5000)
                #expect((long["author"] as? String)?.unicodeScalars.count == 200)
                #expect(byID["relative"]?["link"] as? String == "http://127.0.0.1:\(port)/posts/relative", "a relative link is made absolute")

                let metrics = try await server.get("/metrics").text
                for (reason, count) in [("id", 2), ("link", 1), ("nul", 1)] {
                    #expect(metrics.contains("ptr_upstream_items_skipped_total{reason=\"\(reason)\"} \(count)"), "\(reason)")
                }
                for field in ["title", "summary", "author"] {
                    #expect(metrics.contains("ptr_upstream_fields_cut_total{field=\"\(field)\"} 1"), "\(field)")
                }
            }
        }
    }

    @Test func aDrippingUpstreamFailsWithinTheFeedTimeout() async throws {
        try await HostileUpstream.run { port in
            try await TestServer.run(server("http://127.0.0.1:\(port)/drip") { $0.feedTimeout = .seconds(2) }) { server in
                let (id, stream) = try await server.watchedSession()
                let started = ContinuousClock.now
                _ = try await server.post("/api/sessions/\(id)/refresh")
                let done = try await stream.events(until: "done", within: 60).last!.json
                let elapsed = ContinuousClock.now - started
                print("a dripping upstream failed after \(elapsed) with --feed-timeout 2 s")
                #expect(done["outcome"] as? String == "failed")
                #expect((done["error"] as? String)?.contains("did not send the whole feed within 2 s") == true, "\(done)")
                // The message says the feed's own deadline ended it; the bound says it did not wait
                // for the refresh's (two minutes here) or the drip's end (a minute), with room for
                // a loaded machine (it took 3.1 s under a load of 10 on two cores).
                #expect(elapsed < .seconds(45), "near --feed-timeout, not the drip's end: \(elapsed)")
            }
        }
    }

    @Test func aGzipBombSaysTheDecompressionLimitStoppedIt() async throws {
        try await HostileUpstream.run { port in
            try await TestServer.run(server("http://127.0.0.1:\(port)/bomb") { $0.maxFeedBytes = 64 * 1024 }) { server in
                let done = try await refresh(server).last!.json
                #expect(done["outcome"] as? String == "failed")
                let error = done["error"] as? String ?? ""
                #expect(error.contains("decompress"), "\(error)")
                #expect(error.contains("65536"), "\(error)")
            }
        }
    }
}
