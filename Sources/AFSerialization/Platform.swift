// The platform the core runs on: the one file that decides which C library it calls.
//
// AFSerialization is built and tested on Linux with glibc. The C library is imported here
// and re-exported to the rest of the core, so no other file imports it or names it; the
// calls that would clash with the core's own `open()`/`close()`/`write(to:)` methods go
// through `Platform` below. To port the core to another C library (musl, Darwin), this is
// the file to extend — and the port must then be built and tested there, which this
// repository does not do (see README, "Platform").
#if canImport(Glibc)
@_exported import Glibc
#else
#error("AFSerialization supports Linux with glibc only: extend Sources/AFSerialization/Platform.swift to port it")
#endif

/// System calls whose names the core's own types also use.
enum Platform {
    /// open(2).
    @inline(__always)
    static func open(_ path: UnsafePointer<CChar>, _ flags: Int32) -> Int32 {
        Glibc.open(path, flags)
    }

    /// open(2) with a mode for O_CREAT.
    @inline(__always)
    static func open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
        Glibc.open(path, flags, mode)
    }

    /// close(2).
    @inline(__always) @discardableResult
    static func close(_ fd: Int32) -> Int32 {
        Glibc.close(fd)
    }

    /// write(2).
    @inline(__always)
    static func write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        Glibc.write(fd, buffer, count)
    }

    /// read(2).
    @inline(__always)
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        Glibc.read(fd, buffer, count)
    }
}
