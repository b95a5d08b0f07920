import Hummingbird
import RefreshHTTP

/// Answers every failure of a routed request as ``APIError/answering(_:method:path:session:requestID:logger:)``
/// says, in the API's JSON error shape; a cancelled request stays cancelled. `match` is the
/// request's route, as admission found it: the session its log line names comes from it.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    var match: RouteMatch?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            let refused = APIError.answering(
                error, method: request.method, path: request.uri.path, session: RouteTable.session(in: request.uri.path, match: match),
                requestID: request.headers[.xRequestID], logger: context.logger)
            return JSONResponse.error(refused, request: request)
        }
    }
}
