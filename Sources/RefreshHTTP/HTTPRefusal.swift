import NIOHTTP1

/// A request the connection refuses by itself, from its framing, its head or its timing,
/// before any application sees it. The application says how each is worded and counted
/// (its error body, its log line): the connection only knows which refusal it is.
package enum HTTPRefusal: Error, Equatable, Sendable {
    case requestTimeout
    case malformed(HTTPParserError)
    case headTooLarge(limit: Int)
    case bodyTooLarge(limit: Int)
    /// No `Host` on HTTP/1.1, or more than one; `count` says how many.
    case badHost(count: Int)
    case repeatedOrigin
    /// A `CONNECT`.
    case notAProxy
    /// A `Host` this server is not configured for.
    case unknownHost
    /// A state-changing API request from an origin not allowed.
    case crossOrigin
    case unsupportedMediaType(String?)
    /// `Content-Length` and `Transfer-Encoding`, or two lengths.
    case conflictingFraming
    case unsupportedTransferCoding(String)
    case unsupportedExpectation(String)
    case methodNotAllowed(String, allow: String)
}
