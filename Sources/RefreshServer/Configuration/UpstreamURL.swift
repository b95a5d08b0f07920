import Foundation
import RefreshFeed

/// The upstream URLs of the settings, checked and grouped by the feed they feed.
enum UpstreamURL {
    /// Why `url` cannot be an upstream; `nil` when it can.
    static func problem(with url: String) -> String? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            parsed.host?.isEmpty == false
        else { return "\(url) is not an http or https URL" }
        return nil
    }

    /// Why `entry` cannot be a `NAME=URL` upstream; `nil` when it can.
    static func problem(withNamed entry: String) -> String? {
        guard let (name, url) = split(entry) else { return "\(entry) is not NAME=URL" }
        guard FeedName(name) != nil else {
            return "\(name) is not a feed's name (1 to \(FeedName.maximumLength) letters, digits and ._~:@-, starting with a letter or a digit)"
        }
        return problem(with: url)
    }

    /// The name before the first `=`, and the URL after it.
    static func split(_ entry: String) -> (String, String)? {
        guard let equals = entry.firstIndex(of: "=") else { return nil }
        return (String(entry[..<equals]), String(entry[entry.index(after: equals)...]))
    }
}

extension ServerConfiguration {
    /// Each feed's upstream URLs, in the order given: `feeds` for `main`, then `upstreams` by
    /// name. Entries that do not parse are left out (``validate()`` refuses them first).
    var upstreamURLs: [FeedName: [String]] {
        var urls: [FeedName: [String]] = feeds.isEmpty ? [:] : [.main: feeds]
        for entry in upstreams {
            guard let (name, url) = UpstreamURL.split(entry), let feed = FeedName(name) else { continue }
            urls[feed, default: []].append(url)
        }
        return urls
    }
}
