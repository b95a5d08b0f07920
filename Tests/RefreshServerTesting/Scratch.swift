import Foundation

/// Where tests write files: one folder for the whole run of a test process, removed when the
/// process ends, so running the suites again and again leaves nothing behind.
public enum Scratch {
    /// The run's folder, made on first use.
    public static let root: URL = {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ptr-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: Scratch.root) }
        return root
    }()

    /// A fresh path in the run's folder, named after `name` (nothing is made there).
    public static func path(_ name: String) -> URL {
        root.appendingPathComponent("\(name)-\(UUID().uuidString)")
    }
}
