import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshHTTP
@testable import RefreshServer

/// Reconnecting with `Last-Event-ID` misses nothing and repeats nothing.
@Suite struct ReplayTests {
    @Test func reconnectReplaysExactlyTheMissedEvents() async throws {
        try await TestServer.run { server in
            let id = try await server.session()
            let first = try await server.events(id)
            _ = try await first.nextEvent()
            try await server.sample(id, seq: 1, y: -30)
            let seen = try await first.nextEvent()
            let lastSeen = try #require(seen.id)

            // Missed while away: two states (only the newest is kept) and a whole refresh.
            try await server.sample(id, seq: 2, y: -50)
            try await server.sample(id, seq: 3, y: -90, phase: "release")
            let tail = try await first.events(until: "done")
            let trailingState = try await first.nextEvent()
            let everything = tail + [trailingState]

            let second = try await server.events(id, lastEventID: lastSeen)
            #expect(try await second.next().retry != nil)
            var replayed: [SSE] = []
            while replayed.last?.id != trailingState.id { replayed.append(try await second.nextEvent()) }
            let expected = everything.filter { $0.event != "state" } + [trailingState]
            #expect(replayed.map(\.id) == expected.map(\.id), "replayed \(replayed) expected \(expected)")
            #expect(replayed.map(\.data) == expected.map(\.data))
            #expect(replayed.allSatisfy { $0.id! > lastSeen })
            // Nothing more, no snapshot twice.
            try await server.sample(id, seq: 4, y: -10)
            let live = try await second.nextEvent()
            #expect(live.id! > trailingState.id!)
            #expect(live.json["seq"] as? Int == 4)
        }
    }

    @Test func reconnectWithNothingMissedSendsNothing() async throws {
        try await TestServer.run { server in
            let id = try await server.session()
            try await server.sample(id, seq: 1, y: -30)
            let first = try await server.events(id)
            let snapshot = try await first.nextEvent()
            let second = try await server.events(id, lastEventID: snapshot.id)
            _ = try await second.next()
            try await server.sample(id, seq: 2, y: -40)
            let next = try await second.nextEvent()
            #expect(next.json["seq"] as? Int == 2)
        }
    }

    @Test func aGapBeyondTheBufferAsksForAReset() async throws {
        var configuration = TestServer.configuration()
        // Larger than one refresh's events (progress, items, done), so the live stream
        // keeps up, and smaller than three refreshes', so the late one falls behind.
        configuration.replayBufferLength = 8
        try await TestServer.run(configuration) { server in
            let id = try await server.session()
            let stream = try await server.events(id)
            let snapshot = try await stream.nextEvent()
            for _ in 0..<3 {
                _ = try await server.post("/api/sessions/\(id)/refresh")
                _ = try await stream.events(until: "done")
            }
            let late = try await server.events(id, lastEventID: snapshot.id)
            _ = try await late.next()
            let reset = try await late.nextEvent()
            #expect(reset.event == "reset")
            let state = try await late.nextEvent()
            #expect(state.event == "state")
            let unknown = try await server.events(id, lastEventID: 999_999)
            _ = try await unknown.next()
            #expect(try await unknown.nextEvent().event == "reset", "an id from elsewhere is a gap too")
        }
    }

    @Test func aSessionsRingHoldsTheBytesTheSettingSays() async throws {
        var configuration = TestServer.configuration()
        configuration.replayBufferBytes = 4096
        configuration.pageSize = 5
        let now = Timestamp.now().milliseconds
        let feed = MemoryFeed(
            items: (0..<40).map {
                FeedItem(id: "i\($0)", title: String(repeating: "t", count: 1500), published: Timestamp(milliseconds: now - Int64($0) * 1000))
            })
        try await TestServer.run(configuration, feed: feed) { server in
            let id = try await server.session()
            let stream = try await server.events(id)
            let snapshot = try await stream.nextEvent()
            // Four events a page (two progress, items, done), each page over the bound by itself.
            for _ in 0..<8 {
                _ = try await server.post("/api/sessions/\(id)/load-more")
                let events = try await stream.events(until: "done")
                // The live reader gets every page, each over the bound by itself.
                #expect(events.filter { $0.event == "items" }.count == 1)
                #expect(!events.contains { $0.event == "reset" })
            }
            // Each page of five 1.5 KB titles is over the bound alone: the first pages are gone.
            let late = try await server.events(id, lastEventID: snapshot.id)
            _ = try await late.next()
            #expect(try await late.nextEvent().event == "reset")
        }
    }

    @Test func aClientThatLeavesIsNoticedAtOnce() async throws {
        try await TestServer.run { server in
            let id = try await server.session()
            let task = Task {
                let stream = try await server.events(id)
                _ = try await stream.nextEvent()
                try await Task.sleep(for: .seconds(60))
            }
            // Bounded at half a minute each: far under the 120 s a stream waits for a reader
            // that stopped reading, so only noticing the close itself passes.
            var open = 0
            let opening = ContinuousClock.now
            while open == 0, ContinuousClock.now - opening < .seconds(30) {
                try await Task.sleep(for: .milliseconds(20))
                open = try await server.state(id)["openStreams"] as? Int ?? 0
            }
            #expect(open == 1)
            task.cancel()
            var closed = false
            let leaving = ContinuousClock.now
            while !closed, ContinuousClock.now - leaving < .seconds(30) {
                try await Task.sleep(for: .milliseconds(20))
                closed = try await server.state(id)["openStreams"] as? Int == 0
            }
            #expect(closed, "the stream was not released after the client left")
        }
    }

    @Test func keepaliveCommentsFlowOnIdleStreams() async throws {
        var configuration = TestServer.configuration()
        configuration.keepaliveInterval = .seconds(1)
        try await TestServer.run(configuration) { server in
            let (_, stream) = try await server.watchedSession()
            let block = try await stream.next()
            #expect(block.comment == "keepalive")
        }
    }

    /// A store whose reads stall (each head takes seconds) while sessions read several feeds:
    /// the look at the feeds' heads waits on it, the keepalives do not.
    @Test func keepalivesFlowWhileTheStoreStalls() async throws {
        var configuration = TestServer.configuration()
        configuration.keepaliveInterval = .seconds(1)
        let store = StallingStore()
        try await TestServer.run(configuration, feed: store) { server in
            for feed in ["a", "b", "c", "d"] { _ = try await server.session(#"{"feed":"\#(feed)"}"#) }
            let (_, stream) = try await server.watchedSession()
            // The store stalls until the test lets it go: three keepalives come meanwhile (a
            // keepalive that waited on the store would never come).
            store.stalls.withLock { $0 = true }
            var keepalives = 0
            while keepalives < 3 {
                if try await stream.next().comment == "keepalive" { keepalives += 1 }
            }
            store.stalls.withLock { $0 = false }
            #expect(keepalives == 3, "one a second, whatever the store does")
        }
    }

    @Test func endingASessionClosesItsStreams() async throws {
        try await TestServer.run { server in
            let (id, stream) = try await server.watchedSession()
            #expect(try await server.request(.DELETE, "/api/sessions/\(id)").status == 204)
            #expect(try await stream.ends(within: 30))
            #expect(try await server.get("/api/sessions/\(id)").status == 404)
            #expect(try await server.request(.DELETE, "/api/sessions/\(id)").status == 404)
        }
    }
}

/// The event log itself: bounded, coalescing states, detecting gaps.
@Suite struct EventLogTests {
    func data(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test func anEventIsFramedOnceAndItsDataSharesTheFrame() {
        let event = ServerEvent(id: 42, kind: .state, data: data(#"{"phase":"armed"}"#))
        #expect(String(buffer: event.frame) == "id: 42\nevent: state\ndata: {\"phase\":\"armed\"}\n\n")
        #expect(String(buffer: event.data) == #"{"phase":"armed"}"#)
    }

    /// An event carries its frame as an HTTP chunk, so a stream woken for it alone writes the
    /// event's own bytes; several events are still one chunk of their frames.
    @Test func anEventIsItsOwnChunkAndALoneOneIsWrittenWithoutACopy() throws {
        // Sizes on both sides of a size line's growing by a digit.
        for length in [0, 1, 229, 230, 4069, 4070, 65509, 65510] {
            let event = ServerEvent(id: 7, kind: .news, data: ByteBuffer(repeating: 0x61, count: length))
            #expect(event.chunk == HTTPChunk.frame([event.frame]), "payload of \(length)")
            #expect(event.frameBytes == event.frame.readableBytes)
            #expect(event.data == ByteBuffer(repeating: 0x61, count: length))
        }
        let lone = ServerEvent(id: 3, kind: .state, data: data("{}"))
        let answer = ReplayCache.Answer(events: [lone], cursor: 3, coalesced: 0, sampleArrival: nil)
        let part = try #require(answer.parts?.first)
        #expect(answer.parts?.count == 1)
        #expect(part.withVeryUnsafeBytes { $0.baseAddress } == lone.chunk.withVeryUnsafeBytes { $0.baseAddress }, "a copy")
        let next = ServerEvent(id: 4, kind: .done, data: data("{}"))
        let two = ReplayCache.Answer(events: [lone, next], cursor: 4, coalesced: 0, sampleArrival: nil)
        #expect(two.parts == [HTTPChunk.frame([lone.frame, next.frame])])
    }

    @Test func framesAreChunkedOnceForEveryStream() {
        let chunk = HTTPChunk.frame([data("id: 1\n\n"), data("id: 2\n\n")])
        #expect(String(buffer: chunk) == "e\r\nid: 1\n\nid: 2\n\n\r\n")
    }

    @Test func aChunksSizeLineIsItsSizeInHexadecimal() {
        var sizes = [0, 1, 9, 10, 15, 16, 17, 255, 256, 4095, 4096, 32 * 1024, 1_000_000, Int(Int32.max), Int.max]
        var random = SystemRandomNumberGenerator()
        sizes += (0..<2_000).map { _ in Int.random(in: 0...(1 << Int.random(in: 0...40, using: &random)), using: &random) }
        for size in sizes {
            var line = ByteBuffer()
            HTTPChunk.writeSizeLine(size, into: &line)
            #expect(String(buffer: line) == String(size, radix: 16) + "\r\n", "size \(size)")
        }
        for size in sizes where size <= 70_000 {
            let chunk = HTTPChunk.frame([ByteBuffer(repeating: 0x61, count: size)])
            #expect(chunk.readableBytes == HTTPChunk.size(ofChunkOf: size), "size \(size)")
            #expect(chunk.capacity < 2 * chunk.readableBytes, "size \(size): asked for more than it takes")
        }
    }

    @Test func keepsOnlyTheNewestStateAndEveryOtherEvent() throws {
        var log = EventLog(capacity: 8)
        log.append(.state, data("1"))
        log.append(.progress, data("2"))
        log.append(.state, data("3"))
        log.append(.state, data("4"))
        log.append(.items, data("5"))
        let events = try #require(log.events(after: 0).events)
        #expect(events.map(\.id) == [2, 4, 5])
        let fromThree = try #require(log.events(after: 4).events)
        #expect(fromThree.map(\.id) == [5])
    }

    @Test func aStateAfterTheLastOtherEventComesLast() throws {
        var log = EventLog(capacity: 8)
        log.append(.done, data("1"))
        log.append(.state, data("2"))
        let events = try #require(log.events(after: 0).events)
        #expect(events.map(\.id) == [1, 2])
        #expect(String(buffer: events[1].frame) == "id: 2\nevent: state\ndata: 2\n\n")
    }

    @Test func aReaderBehindTheRingHasAGap() throws {
        var log = EventLog(capacity: 3)
        for index in 1...5 { log.append(.progress, data("\(index)")) }
        #expect({ if case .gap = log.events(after: 1) { true } else { false } }())
        let events = try #require(log.events(after: 2).events)
        #expect(events.map(\.id) == [3, 4, 5])
        #expect({ if case .gap = log.events(after: 6) { true } else { false } }())
    }

    @Test func superseededStatesDoNotCountAgainstTheRing() throws {
        var log = EventLog(capacity: 2)
        log.append(.done, data("1"))
        for index in 2...1000 { log.append(.state, data("\(index)")) }
        let events = try #require(log.events(after: 0).events)
        #expect(events.map(\.id) == [1, 1000])
    }

    @Test func theRingIsBoundedInBytesTooAndAReaderBehindItHasAGap() throws {
        let item = String(repeating: "x", count: 2000)
        // What an event takes is its chunk's capacity (NIO rounds it up to a power of two).
        let frame = ServerEvent(id: 1, kind: .items, data: data(item)).chunk.capacity
        // Room for 20 such frames, and for 256 by count: the oldest of 21 stays, as the 20
        // after it do not fill the bound; the oldest of 22 goes.
        var log = EventLog(capacity: 256, maxBytes: 20 * frame + frame / 2)
        for _ in 1...100 { log.append(.items, data(item)) }
        #expect(log.bytes == 21 * frame)
        #expect({ if case .gap = log.events(after: 78) { true } else { false } }())
        let newest = try #require(log.events(after: 79).events)
        #expect(newest.map(\.id) == Array(80...100))
    }

    /// The bound holds for events of every size: pages of large items keep no more than the
    /// bound (or the newest page alone, when one is larger), however many came; such a page
    /// stays until the small events after it fill the bound.
    @Test func largeEventsAreHeldToTheByteBoundToo() throws {
        var log = EventLog(capacity: 256, maxBytes: 64 * 1024)
        let page = data(String(repeating: "\\u0000", count: 60_000))  // a page of escaped characters
        let size = ServerEvent(id: 1, kind: .items, data: page).chunk.capacity
        for _ in 1...48 { log.append(.items, page) }
        #expect(log.bytes == size, "the newest page alone, not \(log.bytes / size) of them")
        let kept = try #require(log.events(after: 47).events, "the newest page is gone")
        #expect(kept.map(\.id) == [48])
        #expect(log.events(after: 46).events == nil, "a reader behind it has a gap")
        // Its `done`, and what follows, do not push it out: a reader whose socket was busy
        // when the page came still gets it.
        for _ in 1...16 { log.append(.done, data("d")) }
        let withDone = try #require(log.events(after: 47).events, "the page went for small events after it")
        #expect(withDone.map(\.id) == Array(48...64))
        // Once the events after it fill the bound, it goes, and the ring holds less than the
        // bound and one event.
        let small = data(String(repeating: "s", count: 1000))
        let smallSize = ServerEvent(id: 1, kind: .done, data: small).chunk.capacity
        for _ in 1...(64 * 1024 / smallSize + 1) { log.append(.done, small) }
        #expect(log.bytes < 64 * 1024 + smallSize)
        #expect(log.events(after: 47).events == nil, "the page is gone")
    }

    /// A page as large as the bound, then its `done`, while the loop of the session's stream
    /// is busy: the wake-up that carries them has not run, and the stream, asking the log
    /// first (its socket drained), must still find the progress before the page. Once the
    /// wake-up has run, the bound holds again at the next append.
    @Test func eventsAWakeUpHasYetToCarryStayInTheRing() async throws {
        var log = EventLog(capacity: 256, maxBytes: 64 * 1024)
        let added = log.addListener(QuietListener())
        let group = try #require(added)
        let page = data(String(repeating: "x", count: 64 * 1024))
        log.append(.progress, data("1"))
        log.append(.progress, data("2"))
        log.append(.items, page)
        log.append(.done, data("4"))
        let announcement = log.takeAnnouncement()
        let wakeup = try #require(announcement)
        #expect(log.events(after: 0).events?.map(\.id) == [1, 2, 3, 4], "taken before the stream was woken")
        // The wake-up runs on the group's loop; then the next append lets the old ones go.
        wakeup.fire()
        try await group.loop.submit {}.get()
        log.append(.progress, data("5"))
        _ = log.takeAnnouncement()
        #expect(log.events(after: 0).events == nil)
        #expect(log.events(after: 2).events?.map(\.id) == [3, 4, 5])
    }

    /// What a wake-up hands its streams is what a stream at its start would read from the
    /// log: the streams that keep up write it without asking the log again.
    @Test func aWakeUpCarriesWhatTheLogWouldReplay() throws {
        var log = EventLog(capacity: 8)
        _ = log.addListener(QuietListener())
        log.append(.state, data("1"))
        log.append(.progress, data("2"))
        log.append(.news, data("3"))
        log.append(.state, data("4"))
        log.append(.news, data("5"))
        let first = try #require(log.takeAnnouncement()?.news)
        let replayed = try #require(log.events(after: 0).events)
        #expect(first.events.map(\.id) == replayed.map(\.id))
        #expect((first.from, first.through, first.coalesced) == (0, 5, 2))
        #expect(log.takeAnnouncement() == nil)
        log.append(.done, data("6"))
        let second = try #require(log.takeAnnouncement()?.news)
        #expect((second.from, second.through, second.events.map(\.id)) == (5, 6, [6]))

        // Fired from two threads, they may reach a loop in either order: joined, they say the same.
        for joined in [first.merged(with: second), second.merged(with: first)] {
            #expect((joined.from, joined.through, joined.events.map(\.id)) == (0, 6, [2, 4, 5, 6]))
        }
        let replay = ReplayCache(first)
        #expect(replay.announced(after: 0)?.events.map(\.id) == [2, 4, 5])
        #expect(replay.announced(after: 5)?.events.isEmpty == true)
        // A stream between the two asks the log.
        #expect(replay.announced(after: 2) == nil)
    }

    /// A loop that stalls while an action reports: its queued wake-up stops growing at the
    /// bound, and its streams then read the log, which has every event.
    @Test func aQueuedWakeUpCarriesABoundedNumberOfEvents() throws {
        var log = EventLog(capacity: 512)
        _ = log.addListener(QuietListener())
        var queued: Announcement?
        for index in 1...(Announcement.maxCarried + 10) {
            log.append(.progress, data("\(index)"))
            let news = try #require(log.takeAnnouncement()?.news)
            queued = queued.map { $0.merged(with: news) } ?? news
            #expect(queued!.events.count <= Announcement.maxCarried)
        }
        let last = try #require(queued)
        #expect(last.through == UInt64(Announcement.maxCarried + 10))
        // A stream still at the start is not handed the newest part alone: it asks the log.
        #expect(ReplayCache(last).announced(after: 0) == nil)
        let all = try #require(log.events(after: 0).events)
        #expect(all.count == Announcement.maxCarried + 10)
    }
}

extension EventLogTests {
    /// A round to many streams that finds news queued behind it (a refresh's items appended
    /// while it writes the refresh's start) hands the streams it has yet to reach both at
    /// once; those it already wrote to get the news from the next round, and the later ones
    /// are already past it then.
    @Test func aLongRoundTakesTheNewsQueuedBehindItForTheStreamsItHasNotReached() async throws {
        var log = EventLog(capacity: 16)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let members = (0..<200).map { _ in RecordingListener(loop: loop) }
        let group = try #require(members.map { log.addListener($0) }.first ?? nil)
        log.append(.state, data("started"))
        let first = try #require(log.takeAnnouncement()?.news)
        log.append(.items, data("items"))
        log.append(.done, data("done"))
        let second = try #require(log.takeAnnouncement()?.news)
        // The second arrives while the round of the first writes its tenth stream.
        members[10].onWake = { group.shared.withLock { $0.pending = second } }
        try await loop.submit { group.wake(.news, first) }.get()
        let reached = LoopListeners.membersBetweenLooks
        #expect(members[..<reached].allSatisfy { $0.written == [[1]] })
        #expect(members[reached...].allSatisfy { $0.written == [[1, 2, 3]] }, "one write each")
        // The round the second queued: the first streams take it, the others are past it.
        try await loop.submit { group.wake(.news, second) }.get()
        #expect(members[..<reached].allSatisfy { $0.written == [[1], [2, 3]] })
        #expect(members[reached...].allSatisfy { $0.written == [[1, 2, 3]] }, "nothing twice")
    }
}

/// A stream that writes what a round hands it at its cursor, and remembers each write's ids.
private final class RecordingListener: EventListener, @unchecked Sendable {
    // Touched only on `eventLoop`, where every wake-up runs.
    let eventLoop: any EventLoop
    var cursor: UInt64 = 0
    var written: [[UInt64]] = []
    var onWake: (() -> Void)?

    init(loop: any EventLoop) { eventLoop = loop }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        onWake?()
        guard let answer = replay.announced(after: cursor) else { return written.append([]) }
        guard !answer.events.isEmpty else { return }
        written.append(answer.events.map(\.id))
        cursor = answer.cursor
    }
}

/// A stream that is open but never woken in the test.
private final class QuietListener: EventListener {
    let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {}
}

/// A store of many feeds whose heads are not read while `stalls` is set.
private final class StallingStore: FeedStore, ForwardingFeed {
    let stalls: Mutex<Bool>
    private let memory: MemoryFeed
    private let source: any FeedSource
    private let parent: StallingStore?

    init() {
        memory = MemoryFeed()
        source = memory
        stalls = Mutex(false)
        parent = nil
    }

    private init(_ parent: StallingStore, name: FeedName) {
        memory = parent.memory
        source = parent.memory.feed(name)
        stalls = Mutex(false)
        self.parent = parent
    }

    func feed(_ name: FeedName) -> any FeedSource { name == .main ? self : StallingStore(self, name: name) }
    var forwarded: any FeedSource { source }

    /// While stalled, a head is not read until the stall ends (or a minute passes).
    func head() async throws -> FeedHead? {
        let began = ContinuousClock.now
        while (parent ?? self).stalls.withLock({ $0 }), ContinuousClock.now - began < .seconds(60) {
            try await Task.sleep(for: .milliseconds(10))
        }
        return try await source.head()
    }

}

extension EventLog.Replay {
    /// The events, or `nil` for a gap.
    var events: [ServerEvent]? {
        if case .events(let events) = self { events } else { nil }
    }
}
