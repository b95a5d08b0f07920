import CompressNIO
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import RefreshServer

func gunzip(_ data: Data) throws -> Data {
    var buffer = ByteBuffer(bytes: data)
    let output = try buffer.decompress(with: .gzip())
    return Data(output.readableBytesView)
}

/// gzip for files, JSON and event streams, each decoding to exactly the plain bytes.
@Suite struct CompressionTests {
    @Test func staticFilesAreGzippedOnceWithTheirOwnETags() async throws {
        try await TestServer.run { server in
            let plain = try await server.get("/")
            #expect(plain.status == 200)
            #expect(plain.headers["Content-Encoding"].isEmpty)
            #expect(plain.headers["Vary"].first == "Accept-Encoding")
            #expect(plain.headers["Cache-Control"].first != nil)
            let zipped = try await server.get("/", headers: [("Accept-Encoding", "gzip")])
            #expect(zipped.headers["Content-Encoding"].first == "gzip")
            #expect(try gunzip(zipped.body) == plain.body)
            let plainTag = try #require(plain.headers["ETag"].first)
            let zippedTag = try #require(zipped.headers["ETag"].first)
            #expect(plainTag != zippedTag)
            #expect(try await server.get("/", headers: [("If-None-Match", plainTag)]).status == 304)
            #expect(try await server.get("/", headers: [("If-None-Match", zippedTag), ("Accept-Encoding", "gzip")]).status == 304)
            #expect(try await server.get("/", headers: [("If-None-Match", zippedTag)]).status == 200, "the plain variant has its own tag")
            #expect(try await server.get("/", headers: [("Accept-Encoding", "gzip;q=0")]).headers["Content-Encoding"].isEmpty)
            let index = try await server.get("/index.html")
            #expect(index.body == plain.body)
        }
    }

    @Test func largeJSONIsGzippedWhenAccepted() async throws {
        try await TestServer.run { server in
            let plain = try await server.get("/api/items?limit=40")
            let zipped = try await server.get("/api/items?limit=40", headers: [("Accept-Encoding", "gzip, deflate")])
            #expect(zipped.headers["Content-Encoding"].first == "gzip")
            #expect(zipped.body.count < plain.body.count)
            #expect(try gunzip(zipped.body) == plain.body)
        }
    }

    @Test func theEventStreamIsGzippedAndFlushedPerEvent() async throws {
        try await TestServer.run { server in
            let id = try await server.session()
            let stream = try await server.events(id, headers: [("Accept-Encoding", "gzip")])
            #expect(stream.header("Content-Encoding") == "gzip")
            let decompressor = ZlibDecompressorWrapper.gzipStream()
            stream.decode = { chunk in decompressor.inflate(chunk) }
            #expect(try await stream.nextEvent().event == "state")
            try await server.sample(id, seq: 1, y: -42)
            let live = try await stream.nextEvent()
            #expect(live.json["distance"] as? Double == 42, "each event arrives decodable on its own")
        }
    }

    @Test func pathsCannotEscapePublic() async throws {
        try await TestServer.run { server in
            for path in [
                "/../Package.swift", "/%2e%2e/Package.swift", "/..%2fPackage.swift", "/./index.html", "/a/../../etc/passwd", "/%5c..%5cPackage.swift",
            ] {
                let reply = try await server.get(path)
                #expect(reply.status == 400 || reply.status == 404, "\(path): \(reply.status)")
                #expect(!reply.text.contains("PackageDescription"))
                #expect(reply.json["error"] is String)
            }
            #expect(try await server.get("/no-such-file.js").status == 404)
        }
    }
}

/// A gzip stream decoder that keeps its state across chunks.
final class ZlibDecompressorWrapper: @unchecked Sendable {
    // One test task feeds it, in order.
    private let decompressor: ZlibDecompressor

    private init() throws { decompressor = try ZlibDecompressor(algorithm: .gzip) }

    static func gzipStream() -> ZlibDecompressorWrapper { try! ZlibDecompressorWrapper() }

    func inflate(_ chunk: ByteBuffer) -> String {
        var input = chunk
        var text = ""
        while input.readableBytes > 0 {
            var output = ByteBufferAllocator().buffer(capacity: 64 * 1024)
            do {
                try decompressor.inflate(from: &input, to: &output)
            } catch {
                if output.readableBytes == 0 { break }
            }
            text += String(buffer: output)
        }
        return text
    }

    /// `Accept-Encoding` as RFC 9110 §12.5.3 reads it: a coding named outright overrides `*`,
    /// whichever comes first, and a quality of 0 refuses.
    @Test(arguments: [
        ("gzip", true), ("x-gzip", true), ("GZIP;Q=0.5", true), ("*", true), ("deflate, gzip;q=1.0", true), ("*;q=0, gzip", true),
        ("gzip;q=0.001", true), ("*, gzip;q=0", false), ("gzip;q=0, *", false), ("gzip; q=0", false), ("gzip;q=0.000", false),
        ("br, *;q=0", false), ("identity", false), ("gzip;q=abc", false), ("gzip;q=2", false), ("", false), ("*;q=0", false),
    ])
    func acceptEncodingQualitiesAreHonoured(_ field: String, _ gzip: Bool) {
        #expect(Gzip.accepted(by: HTTPHeaders([("Accept-Encoding", field)])) == gzip)
    }

    @Test func aQualityInOneFieldOverridesAWildcardInAnother() {
        #expect(!Gzip.accepted(by: HTTPHeaders([("Accept-Encoding", "*"), ("Accept-Encoding", "gzip;q=0")])))
    }

    /// Streams, JSON and files alike: `*, gzip;q=0` is answered plain.
    @Test func gzipRefusedBesideAWildcardIsNotSent() async throws {
        try await TestServer.run { server in
            let refusing = [("Accept-Encoding", "*, gzip;q=0")]
            #expect(try await server.get("/", headers: refusing).headers["Content-Encoding"].isEmpty)
            #expect(try await server.get("/api/items?limit=40", headers: refusing).headers["Content-Encoding"].isEmpty)
            let stream = try await server.events(try await server.session(), headers: refusing)
            #expect(stream.header("Content-Encoding") == nil)
            #expect(try await stream.nextEvent().event == "state")
        }
    }
}
