import NIOCore
import RefreshHTTP

/// One event stream carrying the events of several sessions of one client (`GET
/// /api/events?session=A&session=B:41`), so that the tabs of a browser share one of its six
/// HTTP/1.1 connections. Each session is a member with its own place in its log, written as
/// that session's stream would write it; an `event: session` whose data is a session's id
/// comes before the events of a member other than the last one written, and the ids that
/// follow are that session's own (a reader resumes each session from its own last id).
///
/// A member whose session ends is told so (`event: ended`, after its `event: session`) and
/// leaves; the stream goes on for the others and ends with the last. Not compressed: one
/// gzip stream cannot interleave several sessions' shared frames.
final class SharedConnectionStream: HTTPStream {
    /// At most this many sessions share a stream.
    static let maxSessions = 32

    private struct Member {
        let id: String
        var events: EventStream
    }

    /// Set once the stream is open, before anything can wake it; `nil` once a member left.
    private var members: [Member?] = []
    /// The member whose events were written last: the next other one is named first.
    private var lastWritten: Int?
    /// Members that ended and whose reader has not been told yet (the socket was full).
    private var endedUntold: [String] = []
    /// When the stream last wrote: the keepalive tick of every member needs one comment on
    /// the connection, not one per member.
    private var lastWrite = ContinuousClock.now
    private let writer: StreamWriter
    private let metrics: ServerMetrics

    init(writer: StreamWriter, metrics: ServerMetrics) {
        self.writer = writer
        self.metrics = metrics
    }

    var eventLoop: any EventLoop { writer.eventLoop }

    /// On the event loop, while opening: the members in the order of their listeners' indexes.
    func join(_ id: String, _ events: EventStream) {
        members.append(Member(id: id, events: events))
    }

    /// The bytes that name `id` as the session of the events after them, as one chunk.
    static func naming(_ id: String) -> ByteBuffer {
        HTTPChunk.frame([ByteBuffer(string: "event: session\ndata: \(id)\n\n")])
    }

    /// The bytes that tell a reader `id` ended, as one chunk.
    static func ending(_ id: String) -> ByteBuffer {
        HTTPChunk.frame([ByteBuffer(string: "event: session\ndata: \(id)\n\nevent: ended\ndata: {\"session\":\"\(id)\"}\n\n")])
    }

    /// On the connection's event loop: member `index`'s session has something for it.
    func woken(member index: Int, _ reason: Wakeup.Reason, replay: inout ReplayCache) {
        guard members.indices.contains(index), members[index] != nil else { return }
        switch reason {
        case .accessExpired:
            return writer.end(self)
        case .sessionEnded:
            let id = members[index]!.id
            members[index] = nil  // its subscription lets go of the session
            if lastWritten == index { lastWritten = nil }
            endedUntold.append(id)
            tellEnded()
            if members.allSatisfy({ $0 == nil }) { writer.end(self) }
            return
        case .news, .tick:
            break
        }
        var reason = reason
        while writer.mayWrite(self), var member = members[index] {
            let batch: EventStream.Batch?
            do {
                batch = try member.events.woken(reason, replay: &replay)
            } catch {
                return writer.fail(self)
            }
            members[index] = member
            guard let batch else { return }
            if batch.keepalive {
                // Nothing of the session's: no name before it, and none at all when the
                // connection is not quiet.
                guard ContinuousClock.now - lastWrite >= member.events.quietEnough else { return }
                lastWrite = .now
                return writer.write(batch.parts, of: self)
            }
            var parts = batch.parts
            if lastWritten != index {
                parts.insert(Self.naming(member.id), at: 0)
                lastWritten = index
            }
            writer.write(parts, of: self)
            lastWrite = .now
            if let arrived = replay.takeSampleArrival() { metrics.sampleWritten(arrived: arrived) }
            guard batch.more else { return }
            reason = .news
        }
    }

    private func tellEnded() {
        while !endedUntold.isEmpty, writer.mayWrite(self) {
            writer.write([Self.ending(endedUntold.removeFirst())], of: self)
            lastWritten = nil
            lastWrite = .now
        }
    }

    func socketDrained() {
        tellEnded()
        for index in members.indices where members[index] != nil {
            var replay = ReplayCache()
            woken(member: index, .news, replay: &replay)
        }
    }

    func finish() -> ByteBuffer? { nil }

    /// Nothing to do: its sessions name it weakly (``SharedStreamListener``), and it leaves
    /// them when it is freed.
    func released() {}
}

/// How a session's log reaches its place in a shared stream: names the stream weakly (a
/// stream's listener names as many sessions as it follows), and the member it is.
///
/// `@unchecked Sendable`: its properties are constants, and the stream is only touched in
/// ``wake(_:replay:)``, on `eventLoop`, the stream's connection's (asserted there).
final class SharedStreamListener: EventListener, @unchecked Sendable {
    let eventLoop: any EventLoop
    private weak let stream: SharedConnectionStream?
    private let member: Int

    init(_ stream: SharedConnectionStream, member: Int) {
        self.stream = stream
        self.member = member
        eventLoop = stream.eventLoop
    }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        eventLoop.assertInEventLoop()
        stream?.woken(member: member, reason, replay: &replay)
    }
}
