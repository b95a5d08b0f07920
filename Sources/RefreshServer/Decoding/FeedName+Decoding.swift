import RefreshFeed

extension FeedName {
    /// `text` as a feed's name, from a URL or a body's `field`: the one place a client's name
    /// is checked, so every route refuses a bad one in the same words.
    static func decoded(_ text: String, field: String) throws(APIError) -> FeedName {
        guard let name = FeedName(text) else {
            throw APIError(
                .badRequest, "invalid_feed",
                "\(field) must be 1 to \(maximumLength) letters, digits and ._~:@-, starting with a letter or a digit.")
        }
        return name
    }
}
