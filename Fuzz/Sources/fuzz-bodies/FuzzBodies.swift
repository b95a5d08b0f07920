import Foundation
import FuzzSupport
import RefreshEngine
import RefreshJSON

@testable import RefreshFeed
@testable import RefreshServer

/// The other JSON bodies: `POST /api/items` (one item or `{"items": [...]}`) and
/// `POST /api/sessions` (`preset`, `config` overrides, `resume`). Every body goes through
/// every decoder, as any client may send any body to any route. What is accepted must be
/// valid and survive being written back; what is refused must be a 4xx.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBodies(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    guard let body = parseBody(bytes) else {
        // An empty body is a session with the default preset.
        if bytes.isEmpty { checkSessionBody(nil) }
        return 0
    }
    checkItems(body)
    checkSessionBody(body)
    return 0
}

private let now = Timestamp(milliseconds: 1_795_000_000_000)

private func checkItems(_ body: JSONValue) {
    let items: [FeedItem]
    do {
        items = try ItemDecoding.decode(body, now: now)
    } catch {
        checkRefusal(error, context: "items")
        return
    }
    invariant((1...ItemDecoding.maxItems).contains(items.count), "\(items.count) items accepted")
    for item in items {
        // The limits as the API documents them, checked here independently of ItemRules: no
        // NUL anywhere, lengths in Unicode code points, links http(s) with a host.
        let limits: [(String, String?, Int)] = [
            ("id", item.id, 500), ("title", item.title, 500), ("summary", item.summary, 5000), ("author", item.author, 200),
            ("link", item.link, 2000),
        ]
        for (name, text, limit) in limits {
            guard let text else { continue }
            invariant(!text.isEmpty && text.unicodeScalars.count <= limit, "\(name) \(text.debugDescription)")
            invariant(!text.utf8.contains(0), "\(name) holds a NUL: \(text.debugDescription)")
            // Texts are trimmed; an id is kept byte for byte, and a link as given (white space
            // around one is refused with it).
            if name != "id" && name != "link" {
                invariant(text == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(name) not trimmed")
            }
        }
        if let link = item.link {
            let lower = link.lowercased()
            let rest = lower.hasPrefix("https://") ? lower.dropFirst(8) : lower.hasPrefix("http://") ? lower.dropFirst(7) : nil
            invariant(rest.map { !$0.isEmpty && !"/?#".contains($0.first!) } == true, "link \(link.debugDescription)")
            invariant(
                !link.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7F || $0.properties.isWhitespace }, "link \(link.debugDescription)")
        }
        invariant(ItemRules.violation(of: item) == nil, "an accepted item breaks ItemRules: \(item)")
        // The time is answered as RFC 3339 text, and must read back as the same instant.
        let published = item.published.rfc3339
        invariant(Timestamp(rfc3339: published) == item.published, "published \(item.published.milliseconds) is written as \(published)")
        var json = JSONWriter()
        json.item(item)
        let written = parsed(json.buffer, context: "item")
        do {
            let again = try ItemDecoding.decode(written, now: now)
            invariant(again == [item], "item changed when read back: \(again) vs \(item)")
        } catch {
            invariant(false, "an item written by the server is refused: \(error.message)")
        }
    }
}

private func checkSessionBody(_ body: JSONValue?) {
    let config: RefreshConfig
    do {
        config = try ConfigDecoding.decode(body)
    } catch {
        checkRefusal(error, context: "session config")
        return
    }
    do {
        try config.validate()
    } catch {
        invariant(false, "an accepted config does not validate: \(error)")
    }
    // The answer carries the whole config; sent back as overrides, it must be the same.
    var json = JSONWriter()
    json.config(config)
    let written = parsed(json.buffer, context: "config")
    do {
        let again = try ConfigDecoding.decode(.object(["config": written]))
        invariant(again == config, "config changed when read back: \(String(buffer: json.buffer))")
    } catch {
        invariant(false, "a config written by the server is refused: \(error.message) in \(String(buffer: json.buffer))")
    }
    do {
        if let resume = try ResumeDecoding.decode(body) {
            invariant(resume.head >= 0, "resume \(resume)")
            invariant(!resume.oldest.isEmpty, "resume without oldest")
        }
    } catch {
        checkRefusal(error, context: "resume")
    }
}
