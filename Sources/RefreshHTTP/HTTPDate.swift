import Foundation
import NIOPosix

/// The `Date` header's value (RFC 9110 IMF-fixdate), formatted once per second on each
/// thread that answers.
///
/// Every answer says it, so it is read the cheap way: the second from the coarse clock
/// (`time`, read from the kernel's page without a system call), the text from the calling
/// thread's own copy, which no other thread's answers touch.
package enum HTTPDate {
    /// `@unchecked Sendable`: each thread has its own, and only that thread touches it.
    private final class Formatted: @unchecked Sendable {
        var second = -1
        var text = ""
    }

    private static let formatted = ThreadSpecificVariable<Formatted>()

    package static func now() -> String {
        let second = Int(time(nil))
        let cache =
            formatted.currentValue
            ?? {
                let cache = Formatted()
                formatted.currentValue = cache
                return cache
            }()
        if cache.second != second {
            cache.text = format(second)
            cache.second = second
        }
        return cache.text
    }

    package static func format(_ second: Int) -> String {
        var time = time_t(second)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
