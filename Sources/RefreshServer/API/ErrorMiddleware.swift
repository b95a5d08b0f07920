import Hummingbird
import Logging
import RefreshFeed

/// Turns every failure into the API's JSON error shape and logs one line per refused
/// request. Anything that is not an ``APIError`` is the server's fault: 500, logged as an error.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return refuse(error, request: request, context: context)
        } catch let error as HTTPError {
            let apiError: APIError =
                switch error.status {
                case .notFound: APIError(.notFound, "Nothing at \(request.uri.path).")
                case .contentTooLarge: .bodyTooLarge(limit: 0)
                case .methodNotAllowed: APIError(.methodNotAllowed, "\(request.method) is not allowed on \(request.uri.path).")
                default: APIError(.httpError, error.body ?? error.status.reasonPhrase, status: error.status)
                }
            return refuse(apiError, request: request, context: context)
        } catch let error as InvalidFeedItem {
            // The routes check items before the store does; should one pass them, the store's
            // refusal is still the client's fault, not a 500.
            return refuse(
                APIError.invalid("item \(error.id.debugDescription): \(error.field.rawValue)", error.violation.reason), request: request,
                context: context)
        } catch let error as FeedStoreUnavailable {
            return refuse(APIError(.storeUnavailable, "\(error).", retryAfter: 5), request: request, context: context)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            context.logger.error("\(request.method) \(request.uri.path.escapedForLog) failed: \(String(describing: error).escapedForLog)")
            return JSONResponse.error(APIError(.internalError, "The server failed; the error is logged."), request: request)
        }
    }

    private func refuse(_ error: APIError, request: Request, context: Context) -> Response {
        error.logRefusal(method: request.method, path: request.uri.path, requestID: request.headers[.xRequestID], logger: context.logger)
        return JSONResponse.error(error, request: request)
    }
}
