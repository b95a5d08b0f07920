/// An item's id as the stores compare it: by its UTF-8 bytes.
///
/// Swift's `String` compares and hashes by canonical equivalence, so `"caf\u{E9}"` and
/// `"cafe\u{301}"` are one `String` key, while SQLite (`BINARY`) and PostgreSQL (`COLLATE
/// "C"`) hold them as two rows. Every dictionary, set or comparison of ids in the stores goes
/// through this type, so that what the server acknowledges is what the database keeps.
struct ItemKey: Hashable, Sendable {
    let id: String

    init(_ id: String) {
        self.id = id
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.id.utf8.elementsEqual(rhs.id.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var id = id
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// `lhs` sorts before `rhs` byte by byte, as `ORDER BY id` does in both databases.
    static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    /// The last of `items` with each id, in the order of those last ones: a batch stored as if
    /// its items were stored one by one.
    static func lastOfEachID(_ items: [FeedItem]) -> [FeedItem] {
        var last: [ItemKey: Int] = [:]
        for (index, item) in items.enumerated() { last[ItemKey(item.id)] = index }
        guard last.count < items.count else { return items }
        return items.indices.filter { last[ItemKey(items[$0].id)] == $0 }.map { items[$0] }
    }
}
