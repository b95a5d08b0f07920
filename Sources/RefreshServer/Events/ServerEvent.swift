import NIOCore
import RefreshEngine
import RefreshFeed
import RefreshHTTP
import RefreshJSON

/// One server-sent event, framed once (`id:`, `event:`, `data:`) and then shared, byte for
/// byte, by every stream and every replay that sends it.
struct ServerEvent: Sendable {
    enum Kind: String, Sendable {
        case state, progress, items, done, news, reset
    }

    let id: UInt64
    let kind: Kind
    /// The complete frame, ending with the blank line: a view of ``chunk``'s bytes.
    let frame: ByteBuffer
    /// The frame as one HTTP chunk (its size line, the frame, its end): what a stream writes
    /// when this event is all it has to send, as it is.
    let chunk: ByteBuffer
    /// Where the JSON payload starts in `frame`.
    private let dataOffset: UInt32

    init(id: UInt64, kind: Kind, data: ByteBuffer) {
        self.id = id
        self.kind = kind
        let idText = String(id)
        let length =
            "id: ".utf8.count + idText.utf8.count + "\nevent: ".utf8.count + kind.rawValue.utf8.count + "\ndata: ".utf8.count
            + data.readableBytes + "\n\n".utf8.count
        // Exactly the chunk's size, so it is never grown (and doubled) on the way.
        var chunk = ByteBufferAllocator().buffer(capacity: HTTPChunk.size(ofChunkOf: length))
        HTTPChunk.writeSizeLine(length, into: &chunk)
        let start = chunk.writerIndex
        chunk.writeStaticString("id: ")
        chunk.writeString(idText)
        chunk.writeStaticString("\nevent: ")
        chunk.writeString(kind.rawValue)
        chunk.writeStaticString("\ndata: ")
        dataOffset = UInt32(chunk.writerIndex - start)
        chunk.writeImmutableBuffer(data)
        chunk.writeStaticString("\n\n")
        assert(chunk.writerIndex - start == length, "the frame's length was miscounted")
        // The chunk is complete before the frame is taken as a view of it: a write to a
        // buffer whose storage is shared copies it.
        chunk.writeStaticString("\r\n")
        frame = chunk.getSlice(at: start, length: length)!
        self.chunk = chunk
    }

    /// The JSON payload, sharing the frame's bytes.
    var data: ByteBuffer {
        frame.getSlice(at: Int(dataOffset), length: frame.writerIndex - Int(dataOffset) - 2) ?? ByteBuffer()
    }
}

/// The `data:` payloads of the events, written without an encoder.
enum EventData {
    static func state(_ state: GestureState) -> ByteBuffer {
        var json = JSONWriter(capacity: 192)
        json.gestureState(state)
        return json.buffer
    }

    static func progress(action: ActionID, kind: ActionKind, fraction: Double, stage: String, message: String) -> ByteBuffer {
        var json = JSONWriter(capacity: 160)
        json.beginObject()
        json.field("actionId", action.description)
        json.field("kind", kind.rawValue)
        json.field("fraction", fraction)
        json.field("stage", stage)
        json.field("message", message)
        json.endObject()
        return json.buffer
    }

    /// `head`, when the items bring the page up to date: the feed position it has now seen
    /// everything up to, which a page that loses its session resumes from elsewhere.
    static func items(action: ActionID?, op: String, items: [FeedItem], hasMore: Bool, head: FeedPosition? = nil) -> ByteBuffer {
        var json = JSONWriter(capacity: 128 + items.count * 200)
        json.beginObject()
        json.field("actionId", action?.description)
        json.field("op", op)
        json.key("items")
        json.items(items)
        json.field("hasMore", hasMore)
        if let head { json.field("head", Int(head)) }
        json.endObject()
        return json.buffer
    }

    static func done(action: ActionID, kind: ActionKind, outcome: Outcome, added: Int, error: String?) -> ByteBuffer {
        var json = JSONWriter(capacity: 128)
        json.beginObject()
        json.field("actionId", action.description)
        json.field("kind", kind.rawValue)
        json.field("outcome", outcome.rawValue)
        json.field("added", added)
        if let error { json.field("error", error) }
        json.endObject()
        return json.buffer
    }

    static func news(count: FeedPosition, head: FeedHead) -> ByteBuffer {
        var json = JSONWriter(capacity: 160 + head.item.title.utf8.count)
        json.beginObject()
        json.field("count", Int(count))
        json.key("newest")
        json.beginObject()
        json.field("id", head.item.id)
        json.field("title", head.item.title)
        json.field("published", head.item.published.rfc3339)
        json.endObject()
        json.field("head", Int(head.position))
        json.endObject()
        return json.buffer
    }

    static func reset(reason: String) -> ByteBuffer {
        var json = JSONWriter(capacity: 64)
        json.beginObject()
        json.field("reason", reason)
        json.endObject()
        return json.buffer
    }
}

extension JSONWriter {
    mutating func gestureState(_ state: GestureState) {
        beginObject()
        field("edge", state.edge?.rawValue)
        field("phase", state.phase.rawValue)
        field("pull", state.pull)
        field("distance", state.distance)
        field("rotation", state.rotation)
        field("indicatorOffset", state.indicatorOffset)
        field("reveal", state.reveal)
        field("label", state.label)
        key("seq")
        if let seq = state.seq { value(seq) } else { null() }
        endObject()
    }
}
