extension AccessControl {
    /// Which of `patterns` (the insights' buckets, by index) the request may read the pull
    /// insights of; only `requested`'s when it names one. The right is the publish right or
    /// the token right `insights` on every feed of a bucket, or the static publish token;
    /// without keys, as publishing: the publish token, or a local client of a server on
    /// loopback only. A refusal for a pattern comes before whether it is a bucket at all, so
    /// it says nothing of how the server counts.
    func insightsBuckets(of patterns: [FeedPattern], requested: FeedPattern?, _ carrier: Carrier, client: String) throws(APIError) -> [Int] {
        let mayRead = try insightsReader(carrier, client: client)
        if let requested {
            guard mayRead(requested) else { throw insufficientScope() }
            guard let index = patterns.firstIndex(of: requested) else {
                throw APIError(.notFound, "No insights are counted under \(requested): the server counts them under its --insights-feed patterns.")
            }
            return [index]
        }
        let allowed = patterns.indices.filter { mayRead(patterns[$0]) }
        guard !allowed.isEmpty else { throw insufficientScope() }
        return allowed
    }

    private func insightsReader(_ carrier: Carrier, client: String) throws(APIError) -> (FeedPattern) -> Bool {
        guard let verifier else {
            if isPublishToken(carrier) { return { _ in true } }
            guard publishToken == nil else { throw APIError(.unauthorized, "Insights need the header Authorization: Bearer <publish token>.") }
            guard listensOnLoopbackOnly, Self.isLoopback(client) else {
                throw APIError(.unauthorized, "Insights need --publish-token when they are read from another host.")
            }
            return { _ in true }
        }
        let credentials: FeedAccess.Credentials =
            switch try credentials(carrier, verifier: verifier) {
            case .none: .none
            case .publishToken: .publishToken
            case .token(let token): .token(token.rights)
            }
        if case .none = credentials { throw refused(.missing) }
        return { rules.decideInsights(on: $0, with: credentials) == .allowed }
    }

    private func insufficientScope() -> APIError { refused(.insufficientScope) }
}
