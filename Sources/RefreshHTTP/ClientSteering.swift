import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Has the kernel hand each new connection to the listener chosen by the client's address,
/// so that a client's connections meet on one event loop (see ``HTTPServer``).
///
/// A classic BPF program attached to the listeners' `SO_REUSEPORT` group returns the index
/// of the listener to use: the 32 bits at offset 12 of the IP header, modulo the number of
/// listeners. In IPv4 that is the source address; in IPv6 it is the second half of the
/// source's /64, so a client's addresses within its block (privacy addresses) stay together,
/// as they do for the per-client limits.
package enum ClientSteering {
    package struct Unsupported: Error, CustomStringConvertible {
        package let description: String
    }

    /// Attaches the program to `listener`'s group of `listeners` sockets.
    package static func attach(to listener: any Channel, listeners: Int) async throws {
        #if os(Linux)
        guard let provider = listener as? any SocketOptionProvider else {
            throw Unsupported(description: "the listener takes no socket options")
        }
        // struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }
        let instructions: [(code: UInt16, k: UInt32)] = [
            (0x20, 0xFFF0_000C),  // BPF_LD | BPF_W | BPF_ABS: A = 32 bits at SKF_NET_OFF + 12
            (0x94, UInt32(listeners)),  // BPF_ALU | BPF_MOD | BPF_K: A %= listeners
            (0x16, 0),  // BPF_RET | BPF_A: the listener's index
        ]
        let program = UnsafeMutableRawPointer.allocate(byteCount: 8 * instructions.count, alignment: 8)
        defer { program.deallocate() }
        for (index, instruction) in instructions.enumerated() {
            program.storeBytes(of: instruction.code, toByteOffset: 8 * index, as: UInt16.self)
            program.storeBytes(of: 0, toByteOffset: 8 * index + 2, as: UInt16.self)  // jt, jf
            program.storeBytes(of: instruction.k, toByteOffset: 8 * index + 4, as: UInt32.self)
        }
        // struct sock_fprog { unsigned short len; struct sock_filter *filter; }: 16 bytes,
        // the length in the low bytes of the first word, the pointer in the second.
        let fprog: (UInt64, UInt64) = (UInt64(instructions.count), UInt64(UInt(bitPattern: program)))
        // SO_ATTACH_REUSEPORT_CBPF; the kernel copies the program before this returns.
        try await provider.unsafeSetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: 51, value: fprog).get()
        #else
        throw Unsupported(description: "steering connections by client needs Linux")
        #endif
    }
}
