import NIOCore
import RefreshEngine
import RefreshFeed
import RefreshHTTP
import RefreshJSON

/// One server-sent event, framed once (`id:`, `event:`, `data:`) and then shared, byte for
/// byte, by every stream and every replay that sends it.
struct ServerEvent: Sendable {
    enum Kind: String, Sendable {
        case state, progress, items, done, news, changes, reset
    }

    let id: UInt64
    let kind: Kind
    /// The frame as one HTTP/1.1 chunk: its size line, the frame, CRLF. A plain stream woken
    /// for this event alone writes these bytes as they are; every session's `state` and
    /// `news` events are such, so none is copied again into a chunk of its own.
    let chunk: ByteBuffer
    /// Where the frame starts in `chunk`: after the size line.
    private let frameOffset: UInt8
    /// Where the JSON payload starts in `chunk`.
    private let dataOffset: UInt32

    init(id: UInt64, kind: Kind, data: ByteBuffer) {
        self.id = id
        self.kind = kind
        let digits = String(id)
        let frameBytes = 4 + digits.utf8.count + 8 + kind.rawValue.utf8.count + 7 + data.readableBytes + 2
        var chunk = ByteBufferAllocator().buffer(capacity: HTTPChunk.size(ofChunkOf: frameBytes))
        HTTPChunk.writeSizeLine(frameBytes, into: &chunk)
        frameOffset = UInt8(chunk.writerIndex)
        chunk.writeStaticString("id: ")
        chunk.writeString(digits)
        chunk.writeStaticString("\nevent: ")
        chunk.writeString(kind.rawValue)
        chunk.writeStaticString("\ndata: ")
        dataOffset = UInt32(chunk.writerIndex)
        chunk.writeImmutableBuffer(data)
        chunk.writeStaticString("\n\n\r\n")
        assert(chunk.readableBytes == HTTPChunk.size(ofChunkOf: frameBytes), "the size line says the frame's size")
        self.chunk = chunk
    }

    /// The complete frame, ending with the blank line, sharing the chunk's bytes.
    var frame: ByteBuffer {
        chunk.getSlice(at: Int(frameOffset), length: frameBytes) ?? ByteBuffer()
    }

    /// How many bytes the frame has.
    var frameBytes: Int { chunk.writerIndex - Int(frameOffset) - 2 }

    /// The JSON payload, sharing the chunk's bytes.
    var data: ByteBuffer {
        chunk.getSlice(at: Int(dataOffset), length: chunk.writerIndex - Int(dataOffset) - 4) ?? ByteBuffer()
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
    /// `version`: the feed's version the items were read at.
    static func items(
        action: ActionID?, op: String, items: [FeedItem], hasMore: Bool, head: FeedPosition? = nil, version: FeedVersion? = nil
    ) -> ByteBuffer {
        var json = JSONWriter(capacity: 128 + items.count * 200)
        json.beginObject()
        json.field("actionId", action?.description)
        json.field("op", op)
        json.key("items")
        json.items(items)
        json.field("hasMore", hasMore)
        if let head { json.field("head", Int(head)) }
        if let version { json.field("version", Int(version)) }
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

    /// `changes`: each already encoded (``ChangeLog/encode(_:)``), and the version the page
    /// shows once it applied them.
    static func changes(version: FeedVersion, _ changes: [ByteBuffer]) -> ByteBuffer {
        var json = JSONWriter(capacity: 32 + changes.reduce(0) { $0 + $1.readableBytes + 1 })
        json.beginObject()
        json.field("version", Int(version))
        json.key("changes")
        json.beginArray()
        for change in changes { json.encoded(change) }
        json.endArray()
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

/// Where an `items` event's items go in the page's list: above what it shows (a refresh,
/// live news) or below (a load-more).
enum ItemsOperation: String, Sendable {
    case prepend, append
}
