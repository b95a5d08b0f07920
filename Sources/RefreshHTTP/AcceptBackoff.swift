import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The listening socket's guard against running out of file descriptors (or memory).
///
/// When `accept` fails for want of them, the pending connection stays queued, the socket
/// stays readable, and retrying at once spins a core until descriptors come back. This
/// stops reading from the listening socket (its read interest is dropped, by turning
/// `autoRead` off) and tries again after a pause; connections wait in the kernel's backlog
/// meanwhile. One line says when accepting paused, one when it works again.
///
/// NIO's own `AcceptBackoffHandler` delays the next `read()`, but a read left pending by the
/// failed accept keeps the socket registered for reading, so it does not stop the spin.
package final class AcceptBackoff: ChannelInboundHandler {
    package typealias InboundIn = any Channel
    package typealias InboundOut = any Channel

    /// How long accepting pauses after it failed for want of resources.
    package static let pause = TimeAmount.milliseconds(250)

    private let logger: Logger
    /// Accepts refused in the current episode; 0 outside one.
    private var failures = 0
    private var resume: Scheduled<Void>?

    package init(logger: Logger) {
        self.logger = logger
    }

    /// The line that says accepting paused, once per episode.
    static func pausedMessage(_ error: any Error) -> String {
        "accepting paused: out of file descriptors or memory (\(error)); new connections wait in the backlog, retrying every \(pause.nanoseconds / 1_000_000) ms"
    }

    /// The line that says accepting works again, after `failures` refused attempts.
    static func resumedMessage(_ failures: Int) -> String {
        "accepting again after \(failures) attempts refused for want of file descriptors"
    }

    package static func isExhaustion(_ error: any Error) -> Bool {
        guard let error = error as? IOError else { return false }
        return [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard Self.isExhaustion(error) else { return context.fireErrorCaught(error) }
        if failures == 0 { logger.warning("\(Self.pausedMessage(error))") }
        failures += 1
        guard resume == nil else { return }
        try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        resume = context.eventLoop.assumeIsolated().scheduleTask(in: Self.pause) { [self] in
            resume = nil
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
        }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if failures > 0 {
            logger.notice("\(Self.resumedMessage(failures))")
            failures = 0
        }
        context.fireChannelRead(data)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        resume?.cancel()
        resume = nil
        context.fireChannelInactive()
    }
}
