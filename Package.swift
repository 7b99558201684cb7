// swift-tools-version:6.0
//
// AFSerialization: AFNetworking's request serialization as a pure Swift core
// (`AFSerialization`) and a C-ABI shared library (`libafserialization.so`).
//
// Targets (a `C` prefix means a C-language target, as SwiftPM users read it):
//   CAFSerialization        C: the public header include/afserialization.h exposed to Swift
//                           through a module map (the one source of the ABI: types, enums,
//                           callback typedefs, version), plus private C helpers (fork-safe
//                           locks).
//   AFSerialization         the pure Swift core (reads the version macros from the header).
//   AFSerializationExports  the thin `@_cdecl` layer: exports with the header's types.
//
// The shipped library is built by CMakeLists.txt (or `scripts/build-library.sh`) with
// `-static-stdlib`, a version script that exports only `afs_*`, and a SONAME; a plain
// `swift build` gives the same code for development and `swift test`.
import PackageDescription

let package = Package(
    name: "AFSerialization",
    products: [
        .library(name: "AFSerialization", targets: ["AFSerialization"]),
        .library(name: "afserialization", type: .dynamic, targets: ["AFSerializationExports"]),
    ],
    targets: [
        .target(
            name: "CAFSerialization",
            path: "Sources/CAFSerialization"
        ),
        .target(
            name: "AFSerialization",
            dependencies: ["CAFSerialization"],
            path: "Sources/AFSerialization"
        ),
        .target(
            name: "AFSerializationExports",
            dependencies: ["AFSerialization", "CAFSerialization"],
            path: "Sources/AFSerializationExports"
        ),
        .testTarget(
            name: "AFSerializationTests",
            dependencies: ["AFSerialization"],
            path: "Tests/AFSerializationTests"
        ),
    ]
)
