import Crypto
import Foundation
import FuzzSupport
import JWTKit

@testable import RefreshFeed
@testable import RefreshServer

/// What a client puts in `Authorization: Bearer` or the `ptr_token` cookie, and the rights
/// patterns a token carries. Each input is read three ways:
///
/// - as a token, verified as it is: refused with a reason (a forger cannot sign), never a trap;
/// - as a token's header and claims (`HEADER.CLAIMS`), signed here with the server's secret,
///   so the claims and their checks are reached: an accepted token has an `exp` after now and
///   rights that are all patterns, and one whose header names another algorithm or key is
///   refused for that;
/// - as a feed pattern: one that parses is written back the same, and names the feed it
///   names by its text.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokens(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    let text = String(decoding: bytes, as: UTF8.self)
    check(verifying: text)
    checkSigned(text)
    checkPattern(text)
    return 0
}

private let secret = Array("the fuzzed server's secret, 32 bytes or more".utf8)
private let now = Date(timeIntervalSince1970: 1_795_000_000)

/// The server's verifier of one HS256 key named `k`, made as the server makes it.
private let verifier: TokenVerifier = {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var made: TokenVerifier?
    Task {
        made = try await TokenVerifier([AccessKey(id: "k", algorithm: "HS256", material: .hmac(HMACKey(from: secret)))])
        done.signal()
    }
    done.wait()
    return made!
}()

private func check(verifying token: String) {
    do {
        let verified = try verifier.verify(token, now: now)
        check(verified)
    } catch {
        invariant(token.utf8.count <= TokenVerifier.maximumTokenBytes || error == .tooLarge, "an oversized token refused for \(error)")
    }
}

private func checkSigned(_ text: String) {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 2 else { return }
    let signingInput = Data(parts[0].utf8).base64URL + "." + Data(parts[1].utf8).base64URL
    let signature = HMAC<SHA256>.authenticationCode(for: Array(signingInput.utf8), using: SymmetricKey(data: secret))
    let token = signingInput + "." + Data(signature).base64URL
    do {
        check(try verifier.verify(token, now: now))
        invariant(token.utf8.count <= TokenVerifier.maximumTokenBytes, "an oversized token was taken")
    } catch {
        // Signed with the key: only a header that names another algorithm or key, or claims
        // the server does not take, is refused.
        invariant(error != .signature || !(parts[0].contains("\"HS256\"")), "a token signed with the key failed its signature")
    }
}

private func check(_ token: AccessToken) {
    invariant(token.expires > now, "an expired token was taken: exp \(token.expires)")
    for pattern in token.rights.read + token.rights.publish {
        invariant((try? FeedPattern(pattern.description)) == pattern, "a right does not read back: \(pattern)")
    }
}

private func checkPattern(_ text: String) {
    guard let pattern = try? FeedPattern(text) else { return }
    invariant(pattern.description == text, "\(text.debugDescription) reads back as \(pattern.description.debugDescription)")
    invariant((try? FeedPattern(pattern.description)) == pattern, "\(text.debugDescription) does not parse again")
    let name = text.hasSuffix("*") ? String(text.dropLast()) : text
    if let feed = FeedName(name) {
        invariant(pattern.matches(feed), "\(text.debugDescription) does not name \(name.debugDescription)")
    }
}

extension Data {
    fileprivate var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
