@testable import RefreshServer

extension Session {
    /// The events after `cursor` for an open stream, or a reset and snapshot past a gap.
    func events(after cursor: UInt64) -> (events: [ServerEvent], cursor: UInt64) {
        guard let delivery = delivery(after: cursor) else { return ([], cursor) }
        return (delivery.events, delivery.cursor)
    }
}
