import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Adds `Authorization: Bearer TOKEN`, with the token the app's provider gives at that moment,
/// to the operations the document secures with it: a renewed token is used from the next
/// request on (the next stream of a session whose token expired among them). A session's
/// samples, actions and end go by its id alone, so they carry no token: the sample path
/// does no token work on the server, and the token travels no more often than it must.
struct TokenMiddleware: ClientMiddleware {
    /// The operations whose `security` in Public/openapi.yaml names `token`.
    static let secured: Set<String> = [
        "createSession", "sessionEvents", "sharedEvents", "listItems", "listFeedItems", "getFeed", "publishItems", "publishFeedItems",
        "getItem", "getFeedItem", "replaceItem", "replaceFeedItem", "patchItem", "patchFeedItem", "removeItem", "removeFeedItem", "getInsights",
    ]

    let token: @Sendable () async throws -> String?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if Self.secured.contains(operationID) {
            let token: String?
            do {
                token = try await self.token()
            } catch {
                // The app has no token to give (signed out): not a reason to ask the server
                // again and again.
                throw RefreshError(status: 401, code: "token_unavailable", message: "the app's token provider failed: \(error)")
            }
            if let token { request.headerFields[.authorization] = "Bearer \(token)" }
        }
        return try await next(request, body, baseURL)
    }
}

/// Writes `If-Match` and `If-None-Match` as HTTP says: the generated code writes every header
/// parameter as a URI component, which percent-encodes an entity tag's quotes (`%221%22`),
/// which no server takes for `"1"`.
struct EntityTagMiddleware: ClientMiddleware {
    static let fields: [HTTPField.Name] = [.ifMatch, .ifNoneMatch]

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        for name in Self.fields {
            if let value = request.headerFields[name], let decoded = value.removingPercentEncoding {
                request.headerFields[name] = decoded
            }
        }
        return try await next(request, body, baseURL)
    }
}

/// Turns every answer of 400 or more into a ``RefreshError`` before the generated code sees
/// it: every operation then answers its success or throws one error type with the server's
/// code, message and `Retry-After`, instead of a case per documented status to switch over.
struct ErrorMiddleware: ClientMiddleware {
    /// More than any error body the server writes; a longer one is not read.
    static let largestBody = 64 * 1024

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status.code >= 400 else { return (response, responseBody) }
        var error = RefreshError(status: response.status.code, code: "http_\(response.status.code)", message: response.status.reasonPhrase)
        if let value = response.headerFields[.retryAfter], let seconds = Int(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 {
            error.retryAfter = .seconds(seconds)
        }
        if let responseBody, let data = try? await Data(collecting: responseBody, upTo: Self.largestBody),
            let answer = try? JSONDecoder().decode(ErrorBody.self, from: data)
        {
            error.code = answer.error
            error.message = answer.message
            error.ids = answer.ids ?? []
        }
        throw error
    }

    private struct ErrorBody: Decodable {
        var error: String
        var message: String
        var ids: [String]?
    }
}

/// Runs one generated call: a ``RefreshError`` (from ``ErrorMiddleware``) comes out as it
/// is, any other failure (no connection, an answer cut short, a body that does not decode)
/// as a ``RefreshError`` too, so callers handle one type.
func calling<Output>(_ operation: () async throws -> Output) async throws -> Output {
    do {
        return try await operation()
    } catch let error as ClientError {
        if let refused = error.underlyingError as? RefreshError { throw refused }
        if error.underlyingError is CancellationError { throw CancellationError() }
        if error.response != nil {
            // The server answered, but not as the document says: not a reason to retry.
            throw RefreshError(status: error.response?.status.code ?? 0, code: "undecodable", message: "\(error.underlyingError)")
        }
        throw RefreshError.unreachable(error.underlyingError)
    } catch let error as RefreshError {
        throw error
    } catch is CancellationError {
        throw CancellationError()
    } catch {
        // The generated accessors (`.ok`, `.created`…) throw the runtime's own error for a
        // status the operation does not expect (a redirect not followed, a proxy's answer).
        throw RefreshError(status: 0, code: "unexpected_answer", message: "\(error)")
    }
}
