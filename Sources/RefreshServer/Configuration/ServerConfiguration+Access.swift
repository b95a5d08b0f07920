extension AccessControl {
    /// The rules the configuration sets, each refusal told to `refused`.
    init(configuration: ServerConfiguration, verifier: TokenVerifier?, refused: @escaping @Sendable (AccessRefusal) -> Void) {
        self.init(
            verifier: verifier, publicFeeds: configuration.publicFeedPatterns, publishToken: configuration.publishToken,
            publishingDisabled: configuration.publishingDisabled, listensOnLoopbackOnly: configuration.listensOnLoopbackOnly, refused: refused)
    }
}

extension ServerConfiguration {
    /// The verifier of ``authKeys``' tokens; `nil` without keys. A key that cannot verify
    /// stops the start, named with its setting.
    func tokenVerifier() async throws(ConfigurationError) -> TokenVerifier? {
        guard !authKeys.isEmpty else { return nil }
        var keys: [AccessKey] = []
        do throws(AccessKey.Unusable) {
            for file in authKeys {
                let read: [AccessKey]
                do throws(AccessKey.Unusable) {
                    read = try AccessKey.read(file: file)
                } catch {
                    throw AccessKey.Unusable(description: "\(file) \(error)")
                }
                for key in read where keys.contains(where: { $0.id == key.id }) {
                    throw AccessKey.Unusable(description: "\(file): another file already gives a key named \(key.id) (a kid names one key)")
                }
                keys += read
            }
            return try await TokenVerifier(keys, issuer: authIssuer, audience: authAudience)
        } catch {
            throw ConfigurationError(setting: "auth-key", value: nil, problem: error.description)
        }
    }
}
