import NIOCore
import NIOPosix
import RefreshEngine
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// A stream that is open but never woken in the test.
private final class SilentListener: EventListener {
    let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {}
}

@Suite struct SessionStoreTests {
    @Test func idleSessionsExpireButOnesWithStreamsStay() throws {
        var configuration = ServerConfiguration()
        configuration.sessionIdleTimeout = .seconds(60)
        let store = ServerParts.forTest(configuration: configuration).sessions
        let idle = try store.create(
            config: .init(top: Preset.standard.config.top, bottom: Preset.standard.config.bottom, rotation: true, prefetch: false), client: "test")
        let watched = try store.create(config: Preset.standard.config, client: "test")
        _ = watched.subscribe(SilentListener(), lastEventID: nil, now: .now)
        #expect(store.expireIdle(now: .now) == 0)
        #expect(store.expireIdle(now: .now + .seconds(61)) == 1)
        #expect(throws: APIError.self) { try store.session(idle.id) }
        #expect(try store.session(watched.id) === watched)
    }
}
