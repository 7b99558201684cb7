// swift-tools-version:6.0
//
// AFSerialization: AFNetworking's request serialization as a pure Swift core
// (`AFSerialization`) and a C-ABI shared library (`libafserialization.so`, built from the
// thin `@_cdecl` layer `CAFSerialization`).
//
// The shipped library is built by CMakeLists.txt (or `scripts/build-library.sh`) with
// `-static-stdlib`, a version script that exports only `afs_*`, and a SONAME; a plain
// `swift build` gives the same code for development and `swift test`.
import PackageDescription

let package = Package(
    name: "AFSerialization",
    products: [
        .library(name: "AFSerialization", targets: ["AFSerialization"]),
        .library(name: "afserialization", type: .dynamic, targets: ["CAFSerialization"]),
    ],
    targets: [
        .target(
            name: "AFSerialization",
            path: "Sources/AFSerialization"
        ),
        .target(
            name: "CAFSerialization",
            dependencies: ["AFSerialization"],
            path: "Sources/CAFSerialization"
        ),
        .testTarget(
            name: "AFSerializationTests",
            dependencies: ["AFSerialization"],
            path: "Tests/AFSerializationTests"
        ),
    ]
)
