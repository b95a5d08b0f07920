import RefreshHTTP

extension APIError {
    /// The JSON error a refusal of the connection is answered with.
    init(_ refusal: HTTPRefusal) {
        self =
            switch refusal {
            case .requestTimeout: .requestTimeout
            case .malformed(let error): .malformed(error)
            case .headTooLarge(let limit): .headTooLarge(limit: limit)
            case .bodyTooLarge(let limit): .bodyTooLarge(limit: limit)
            case .badHost(let count): .badHost(count: count)
            case .repeatedOrigin: .repeatedOrigin
            case .notAProxy: .notAProxy
            case .unknownHost: .unknownHost
            case .crossOrigin: .crossOrigin
            case .unsupportedMediaType(let given): .unsupportedMediaType(given)
            case .conflictingFraming: .conflictingFraming
            case .unsupportedTransferCoding(let codings): .unsupportedTransferCoding(codings)
            case .unsupportedExpectation(let expectation): .unsupportedExpectation(expectation)
            case .methodNotAllowed(let method, let allow): .methodNotAllowed(method, allow: allow)
            }
    }
}
