import NIOCore
import NIOPosix

/// One persistent HTTP/1.1 connection, written and read by hand: no parser, no allocation
/// per request beyond the bytes themselves, so the client measures the server, not itself.
final class Connection {
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var buffer = ByteBuffer()

    /// Connects, runs `body` with the connection, closes it.
    static func with<Result>(host: String, port: Int, _ body: (Connection) async throws -> Result) async throws -> Result {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(Connection(inbound: inbound.makeAsyncIterator(), outbound: outbound))
        }
    }

    private init(inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        self.inbound = inbound
        self.outbound = outbound
    }

    private static let headerEnd = Array("\r\n\r\n".utf8)

    func send(_ request: ByteBuffer) async throws {
        try await outbound.write(request)
    }

    static func request(_ method: String, _ path: String, host: String, body: String? = nil, headers: String = "") -> ByteBuffer {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n\(headers)"
        if let body {
            text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        } else {
            text += "\r\n"
        }
        return ByteBuffer(string: text)
    }

    /// Reads one whole response (headers and a `Content-Length` body); answers status and body.
    func response() async throws -> (status: Int, body: String) {
        while true {
            if let end = buffer.withUnsafeReadableBytes({ byteOffset(of: Self.headerEnd, in: $0) }) {
                let headerLength = end + 4
                let head = buffer.getString(at: buffer.readerIndex, length: headerLength) ?? ""
                let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if buffer.readableBytes >= headerLength + length {
                    buffer.moveReaderIndex(forwardBy: headerLength)
                    let body = buffer.readString(length: length) ?? ""
                    buffer.discardReadBytes()
                    return (status, body)
                }
            }
            try await fill()
        }
    }

    /// Reads the stream until `token` appears; consumes through it.
    func read(until token: [UInt8]) async throws {
        while true {
            if let offset = buffer.withUnsafeReadableBytes({ byteOffset(of: token, in: $0) }) {
                buffer.moveReaderIndex(forwardBy: offset + token.count)
                buffer.discardReadBytes()
                return
            }
            try await fill()
        }
    }

    private func fill() async throws {
        guard var chunk = try await inbound.next() else { throw BenchError("the server closed the connection") }
        buffer.writeBuffer(&chunk)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

extension Set where Element == Character {
    static let whitespaces: Set<Character> = [" ", "\t"]
}
