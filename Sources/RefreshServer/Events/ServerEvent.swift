import NIOCore
import RefreshEngine
import RefreshFeed
import RefreshJSON

/// One server-sent event, framed once (`id:`, `event:`, `data:`) and then shared, byte for
/// byte, by every stream and every replay that sends it.
struct ServerEvent: Sendable {
    enum Kind: String, Sendable {
        case state, progress, items, done, news, changes, reset
    }

    let id: UInt64
    let kind: Kind
    /// The complete frame, ending with the blank line.
    let frame: ByteBuffer
    /// Where the JSON payload starts in `frame`.
    private let dataOffset: UInt32

    init(id: UInt64, kind: Kind, data: ByteBuffer) {
        self.id = id
        self.kind = kind
        // Room for the longest id and name, so the frame is never grown (and doubled) on the way.
        var frame = ByteBufferAllocator().buffer(capacity: data.readableBytes + 64)
        frame.writeStaticString("id: ")
        frame.writeString(String(id))
        frame.writeStaticString("\nevent: ")
        frame.writeString(kind.rawValue)
        frame.writeStaticString("\ndata: ")
        dataOffset = UInt32(frame.writerIndex)
        frame.writeImmutableBuffer(data)
        frame.writeStaticString("\n\n")
        self.frame = frame
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
