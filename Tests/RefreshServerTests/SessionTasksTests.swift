import RefreshEngine
import Synchronization
import Testing

@testable import RefreshServer

/// The session's tasks: stopped by key, all at the end, and any started after it at once.
@Suite struct SessionTasksTests {
    /// A task that waits until it is cancelled, then says so.
    private func waiting(_ ended: AsyncStream<String>.Continuation, _ name: String) -> @Sendable () async -> Void {
        {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
            ended.yield(name)
        }
    }

    @Test func oneKeyIsStoppedAndTheOthersRunOn() async {
        let tasks = SessionTasks()
        let (ended, continuation) = AsyncStream.makeStream(of: String.self)
        tasks.start(.action(ActionID(rawValue: 1)), waiting(continuation, "one"))
        tasks.start(.changes, waiting(continuation, "changes"))
        tasks.cancel(.action(ActionID(rawValue: 1)))
        var iterator = ended.makeAsyncIterator()
        #expect(await iterator.next() == "one")
        #expect(tasks.count == 1)
        tasks.close()
        #expect(await iterator.next() == "changes")
        #expect(tasks.count == 0)
    }

    @Test func noTaskStartsAfterTheEnd() async {
        let tasks = SessionTasks()
        tasks.close()
        let ran = Mutex(false)
        tasks.start(.live) { ran.withLock { $0 = true } }
        #expect(tasks.count == 0)
        // A task that had started would have run by the time a task started after it has.
        await Task { await Task.yield() }.value
        #expect(!ran.withLock { $0 })
    }

    @Test func aTaskThatReturnedLeavesAndDoesNotTakeItsSuccessor() async {
        let tasks = SessionTasks()
        let (ended, continuation) = AsyncStream.makeStream(of: String.self)
        tasks.start(.changes) { continuation.yield("first") }
        var iterator = ended.makeAsyncIterator()
        #expect(await iterator.next() == "first")
        tasks.start(.changes, waiting(continuation, "second"))
        // The first's own leaving came before or after the second started: either way the second stays.
        while tasks.count == 0 { await Task.yield() }
        #expect(tasks.count == 1)
        tasks.cancel(.changes)
        #expect(await iterator.next() == "second")
    }
}
