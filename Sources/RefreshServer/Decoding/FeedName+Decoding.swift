import Foundation
import RefreshFeed

extension FeedName {
    /// `text` as a feed's name, from a URL or a body's `field`: the one place a client's name
    /// is checked, so every route refuses a bad one in the same words.
    static func decoded(_ text: String, field: String) throws(APIError) -> FeedName {
        guard let name = FeedName(text) else { throw invalid(field) }
        return name
    }

    /// The refusal of a name that is none, in the same words wherever it came from.
    static func invalid(_ field: String) -> APIError {
        APIError(.invalidFeed, "\(field) must be 1 to \(maximumLength) letters, digits and ._~:@-, starting with a letter or a digit.")
    }

    /// A name as a path segment carries it: percent-encoded or not (`user%3A42` is
    /// `user:42`, as `encodeURIComponent` writes it), then checked like any other.
    static func decoded(pathSegment segment: String, field: String) throws(APIError) -> FeedName {
        try decoded(segment.removingPercentEncoding ?? segment, field: field)
    }
}
