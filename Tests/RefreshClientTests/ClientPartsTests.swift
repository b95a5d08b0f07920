import Foundation
import Testing

@testable import RefreshClient

/// What a replacement session resumes: the list as the events left it.
@Suite struct ShowsTests {
    static func item(_ id: String) -> FeedItem {
        FeedItem(id: id, title: id, published: Date(timeIntervalSince1970: 1_700_000_000))
    }

    static func items(_ operation: ItemsUpdate.Operation, _ ids: [String], head: Int?, action: String? = nil) -> SessionEvent {
        .items(ItemsUpdate(actionID: action, operation: operation, items: ids.map(item), hasMore: true, head: head))
    }

    @Test func aFirstPageThenPagesThenARefresh() {
        var shows = Shows()
        #expect(shows.resume == nil, "nothing shown: nothing to resume")
        shows.note(Self.items(.append, ["c", "b", "a"], head: 40))
        #expect(shows.resume == RefreshClient.Resume(head: 40, pagedThrough: 40, oldest: "a"))
        // A page below moves the oldest item, not the head.
        shows.note(Self.items(.append, ["z", "y"], head: nil, action: "m1"))
        #expect(shows.resume == RefreshClient.Resume(head: 40, pagedThrough: 40, oldest: "y"))
        // A refresh brings the list up to date: the head moves, paging stays below the first head.
        shows.note(Self.items(.prepend, ["e", "d"], head: 42, action: "r1"))
        #expect(shows.resume == RefreshClient.Resume(head: 42, pagedThrough: 40, oldest: "y"))
        // Events that do not change the list change nothing.
        let before = shows
        shows.note(.news(News(count: 3, newestID: "h", newestTitle: "h", newestPublished: Date(), head: 45)))
        shows.note(.done(ActionResult(actionID: "r1", kind: .refresh, outcome: .completed, added: 2, error: nil)))
        shows.note(.progress(ActionProgress(actionID: "r1", kind: .refresh, fraction: 1, stage: "done", message: "")))
        shows.note(.replaced(resumed: true))
        #expect(shows == before)
    }

    @Test func aResetForgetsTheList() {
        var shows = Shows()
        shows.note(Self.items(.append, ["b", "a"], head: 7))
        shows.note(.reset(reason: "gap"))
        #expect(shows == Shows())
        #expect(shows.resume == nil)
        shows.note(Self.items(.append, ["q"], head: 9))
        #expect(shows.resume == RefreshClient.Resume(head: 9, pagedThrough: 9, oldest: "q"))
    }

    @Test func anEmptyFirstPageResumesNothingUntilItemsCome() {
        var shows = Shows()
        shows.note(Self.items(.append, [], head: 0))
        #expect(shows.resume == nil, "a head without an item to page below is no list")
        // Live items into an empty list: their last is the oldest shown.
        shows.note(Self.items(.prepend, ["n2", "n1"], head: 2))
        #expect(shows.resume == RefreshClient.Resume(head: 2, pagedThrough: 0, oldest: "n1"))
        // Later prepends leave the oldest alone.
        shows.note(Self.items(.prepend, ["n3"], head: 3))
        #expect(shows.resume == RefreshClient.Resume(head: 3, pagedThrough: 0, oldest: "n1"))
    }
}

@Suite struct BackoffTests {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    @Test func doublesFromOneSecondUpToTwentyFiveWithAFifthOfJitter() {
        for _ in 0..<50 {
            var backoff = Backoff()
            var base = 1.0
            for _ in 0..<8 {
                let wait = Self.seconds(backoff.delay())
                #expect(wait >= base && wait < base + max(base / 5, 0.25), "\(wait) for a base of \(base)")
                base = min(base * 2, 25)
            }
            #expect(backoff.next == Backoff.longest)
            backoff.reset()
            let first = Self.seconds(backoff.delay())
            #expect(first >= 1 && first < 1.25)
        }
    }

    @Test func waitsWhatTheServerAskedCappedAndStillDoubles() {
        for _ in 0..<50 {
            var backoff = Backoff()
            let asked = Self.seconds(backoff.delay(retryAfter: .seconds(3)))
            #expect(asked >= 3 && asked < 3.6)
            // The ask does not stop the doubling for the next failure without one.
            let next = Self.seconds(backoff.delay())
            #expect(next >= 2 && next < 2.4)
            let minute = Self.seconds(backoff.delay(retryAfter: .seconds(60)))
            #expect(minute >= 60 && minute < 72, "a minute asked is a minute waited")
            let capped = Self.seconds(backoff.delay(retryAfter: .seconds(6000)))
            #expect(capped >= 300 && capped < 360)
            let none = Self.seconds(backoff.delay(retryAfter: .zero))
            #expect(none >= 0 && none < 0.25, "a zero ask still spreads the clients out")
        }
    }
}

@Suite struct RFC3339DateTranscoderTests {
    let transcoder = RFC3339DateTranscoder()
    let instant = Date(timeIntervalSince1970: 1_795_334_400)  // 2026-11-22T08:00:00Z

    @Test func readsBothFormsTheServerWrites() throws {
        #expect(try transcoder.decode("2026-11-22T08:00:00Z") == instant)
        let withMilliseconds = try transcoder.decode("2026-11-22T08:00:00.250Z")
        #expect(abs(withMilliseconds.timeIntervalSince(instant) - 0.25) < 0.000_5)
        let offset = try transcoder.decode("2026-11-22T09:00:00+01:00")
        #expect(offset == instant)
    }

    @Test func writesMillisecondsAndReadsItsOwn() throws {
        let date = instant.addingTimeInterval(0.125)
        let text = try transcoder.encode(date)
        #expect(text == "2026-11-22T08:00:00.125Z")
        #expect(abs(try transcoder.decode(text).timeIntervalSince(date)) < 0.000_5)
    }

    @Test(arguments: ["", "yesterday", "2026-11-22", "08:00:00Z"])
    func refusesWhatIsNotATime(_ text: String) {
        #expect(throws: (any Error).self) { try transcoder.decode(text) }
    }
}
