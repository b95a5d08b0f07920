import FuzzSupport
import NIOCore
import NIOEmbedded
import NIOHTTP1
import RefreshHTTP

/// What a client sends on one connection, read by the reader of plain requests and by NIO's
/// decoder: each request the reader reads, the decoder reads the same (method, target,
/// version, fields in order, whether the connection is kept, body), in the same place in
/// the bytes; and a fresh decoder given what the reader leaves reads it as the decoder that
/// read everything did. The first byte picks the head limit (64 to 319 bytes), so heads on
/// both sides of it are tried.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFraming(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard count > 1, let start else { return 0 }
    let maxHeadBytes = 64 + Int(start[0])
    let bytes = ByteBuffer(bytes: UnsafeBufferPointer(start: start + 1, count: count - 1))

    var left = bytes
    var plain: [HTTPServerRequestPart] = []
    while left.readableBytes > 0, let request = PlainRequest.read(&left, maxHeadBytes: maxHeadBytes) {
        plain.append(.head(request.head))
        if let body = request.body { plain.append(.body(body)) }
        plain.append(.end(nil))
    }
    guard !plain.isEmpty else { return 0 }

    let (decoded, refused) = decode(bytes, maxHeadBytes: maxHeadBytes)
    invariant(decoded.count >= plain.count, "the reader read \(plain.count) parts, the decoder \(decoded.count)")
    // The connection hands what the reader leaves to a fresh decoder, which must read it as
    // the decoder that read everything did.
    let (rest, restRefused) = decode(left, maxHeadBytes: maxHeadBytes)
    invariant(restRefused == refused, "the decoder after the reader refused: \(restRefused), the whole decoder: \(refused)")
    invariant(rest.count == decoded.count - plain.count, "the decoder after the reader read \(rest.count) parts")
    for (read, decoded) in zip(plain + rest, decoded) {
        switch (read, decoded) {
        case (.head(let read), .head(let decoded)):
            invariant(
                read.method == decoded.method && read.uri == decoded.uri && read.version == decoded.version
                    && read.headers.elementsEqual(decoded.headers, by: { $0.name == $1.name && $0.value == $1.value })
                    && read.isKeepAlive == decoded.isKeepAlive,
                "the reader read \(read), the decoder \(decoded)")
        case (.body(let read), .body(let decoded)):
            invariant(read == decoded, "the reader read a body of \(read.readableBytes) bytes, the decoder \(decoded.readableBytes)")
        case (.end, .end):
            break
        default:
            invariant(false, "the reader read \(read) where the decoder read \(decoded)")
        }
    }
    return 0
}

/// The decoder's parts, one body part per request (the decoder may split a body; the reader
/// never does), and whether it refused the bytes after them.
private func decode(_ bytes: ByteBuffer, maxHeadBytes: Int) -> (parts: [HTTPServerRequestPart], refused: Bool) {
    let channel = EmbeddedChannel(handler: HTTPServer.makeDecoder(maxHeadBytes: maxHeadBytes))
    defer { _ = try? channel.finish() }
    let refused = (try? channel.writeInbound(bytes)) == nil
    var parts: [HTTPServerRequestPart] = []
    while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
        if case .body(var more) = part, case .body(var body) = parts.last {
            body.writeBuffer(&more)
            parts[parts.count - 1] = .body(body)
        } else {
            parts.append(part)
        }
    }
    return (parts, refused)
}
