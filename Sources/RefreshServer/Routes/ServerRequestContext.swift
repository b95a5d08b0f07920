import Hummingbird
import Logging
import NIOCore
import RefreshHTTP

/// What a routed request knows besides itself: which client it counts against.
struct ServerRequestContext: RequestContext {
    struct Source: RequestContextSource {
        let channel: any Channel
        let logger: Logger
        /// The client's address, as ``TrustedProxies`` resolved it.
        let client: String
    }

    var coreContext: CoreRequestContextStorage
    let client: String

    init(source: Source) {
        coreContext = .init(source: source)
        client = source.client
    }
}
