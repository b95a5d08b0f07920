import Foundation
import GRDB

/// `--database` as an SQLite file, opened at start so that a path that can never work (a
/// folder, a place that cannot be written) stops the start with one
/// ``DatabaseLocationError``, which the server reports as a configuration error naming the
/// setting: `refresh-server` then exits with EX_CONFIG (78), which a service manager is told
/// not to restart for, instead of failing the same way every few seconds.
public enum SQLiteLocation {
    /// The feed at `path`; a path that cannot hold an SQLite database is a configuration error.
    public static func open(_ path: String, upstreams: [FeedName: UpstreamSet] = [:]) throws -> SQLiteFeed {
        if path != ":memory:" { try check(path) }
        do {
            return try SQLiteFeed(path: path, upstreams: upstreams)
        } catch let error as DatabaseError where unusable.contains(error.resultCode) {
            throw problem(path, "cannot be opened as an SQLite database (\(error.message ?? "\(error.resultCode)"))")
        } catch let error as CocoaError {
            throw problem(path, "its folder cannot be created (\(error.localizedDescription))")
        }
    }

    /// What SQLite answers for a file that no retry will open.
    private static let unusable: [ResultCode] = [.SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_NOTADB]

    /// The reasons SQLite would give in its own words, said in the operator's.
    static func check(_ path: String) throws(DatabaseLocationError) {
        let files = FileManager.default
        var isFolder: ObjCBool = false
        if path.hasSuffix("/") || (files.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue) {
            throw problem(path, "is a folder; name a file in it, such as \((path as NSString).appendingPathComponent("refresh.sqlite"))")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        // The nearest folder that exists: the rest of the path is created in it.
        var existing = folder
        while !files.fileExists(atPath: existing, isDirectory: &isFolder) {
            let parent = (existing as NSString).deletingLastPathComponent
            guard parent != existing, !parent.isEmpty else { break }
            existing = parent
        }
        guard isFolder.boolValue else { throw problem(path, "\(existing) is a file, not a folder") }
        guard files.isWritableFile(atPath: existing) else {
            throw problem(
                path,
                existing == folder
                    ? "the folder \(folder) is not writable (SQLite keeps its journal beside the file)"
                    : "the folder \(folder) cannot be created: \(existing) is not writable")
        }
        if files.fileExists(atPath: path), !(files.isReadableFile(atPath: path) && files.isWritableFile(atPath: path)) {
            throw problem(path, "the file is not readable and writable")
        }
    }

    private static func problem(_ path: String, _ problem: String) -> DatabaseLocationError {
        DatabaseLocationError(path: path, problem: problem)
    }
}
